package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/node"
)

// serve runs a node until ctx ends (SIGINT/SIGTERM), then stops it.
func serve(ctx context.Context, cfg node.Config, out io.Writer) error {
	var dev *devCredentials
	if cfg.Dev {
		var err error
		if dev, err = loadDevCredentials(cfg.DataDir); err != nil {
			return err
		}
		if cfg.AdminToken == "" {
			if dev.AdminToken == "" {
				dev.AdminToken = randomToken()
			}
			cfg.AdminToken = dev.AdminToken
		}
	}
	if dev != nil {
		// The demo account and its credentials file exist before the node
		// answers: a script that waits for /readyz then reads the file.
		cfg.BeforeServe = func(ctx context.Context, n *node.Node) error { return dev.ensureAccount(ctx, n, cfg) }
	}
	n, err := node.New(cfg)
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		return err
	}
	defer n.Stop()
	if dev != nil {
		dev.print(out, n.Addr(), cfg.AdminToken)
	}
	model := "none (Apps that need one are not runnable; cold-email-writer uses its built-in writer)"
	if cfg.Model.BaseURL != "" {
		model = cfg.Model.Model + " at " + node.RedactURL(cfg.Model.BaseURL)
	}
	all, runnable := n.Apps()
	n.Logger().Info("apprun serving", "addr", n.Addr(), "data", cfg.DataDir, "embedded_nats", cfg.NATSURL == "",
		"model", model, "apps", all, "runnable", runnable, "version", version())
	<-ctx.Done()
	n.Logger().Info("apprun shutting down")
	return nil
}

// devCredentials are kept in the data dir (mode 0600) so later dev starts
// print the same ones.
type devCredentials struct {
	path       string
	AdminToken string `json:"admin_token"`
	AccountID  string `json:"account_id"`
	APIKey     string `json:"api_key"`
}

func loadDevCredentials(dataDir string) (*devCredentials, error) {
	d := &devCredentials{path: filepath.Join(dataDir, "dev-credentials.json")}
	data, err := os.ReadFile(d.path)
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, d); err != nil {
		return nil, fmt.Errorf("%s: %w", d.path, err)
	}
	return d, nil
}

func (d *devCredentials) ensureAccount(ctx context.Context, n *node.Node, cfg node.Config) error {
	if d.APIKey != "" {
		return nil
	}
	acct, err := n.Engine().OpenAccount(ctx, "demo@apprun.local", 1000, ledger.By{Actor: "system:dev", Reason: "the dev demo account"})
	if err != nil {
		return fmt.Errorf("dev account: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := n.Reads().WaitFor(wctx, acct.Seq); err != nil {
		return err
	}
	d.AccountID, d.APIKey = acct.AccountID, acct.APIKey
	data, _ := json.MarshalIndent(d, "", "  ")
	return os.WriteFile(d.path, data, 0o600)
}

func (d *devCredentials) print(out io.Writer, addr, adminToken string) {
	base := "http://" + addr
	fmt.Fprintf(out, `
apprun dev mode — demo account %s (1,000 Credits at creation)
  API key:     %s
  Admin token: %s

Create a cold-email-writer run:
  curl -s -X POST %s/api/v1/runs \
    -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \
    -d '{"app_slug":"cold-email-writer","input":{"product_description":"Acme Ledger: bookkeeping automation for small agencies","target_role":"Agency founders running 5-20 person teams"}}'

Stream it (put the run_no from the answer in place of RUN_NO), then fetch the result:
  curl -N %s/api/v1/runs/RUN_NO/events -H 'Authorization: Bearer %s'
  curl -s %s/api/v1/runs/RUN_NO -H 'Authorization: Bearer %s'

`, d.AccountID, d.APIKey, adminToken, base, d.APIKey, base, d.APIKey, base, d.APIKey)
}

func randomToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "adm_" + hex.EncodeToString(b)
}
