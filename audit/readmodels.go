package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apprun/apprun/projections"
)

// snapshotPath is the node's admin route that copies its read models.
const snapshotPath = "/admin/v1/read-models/snapshot"

// readModels opens the read models the log is compared with: a stopped
// node's projections.db, which the audit needs to itself, or (o.Node) a
// snapshot of a running node's, taken through its admin API. cleanup
// removes the snapshot.
func readModels(ctx context.Context, o Options) (store *projections.Store, damage []projections.Damage, cleanup func(), err error) {
	cleanup = func() {}
	path := filepath.Join(o.DataDir, "projections.db")
	if o.Node != "" {
		if o.NATSURL == "" {
			return nil, nil, cleanup, errors.New("audit: a running node's log is read through NATS: give --nats-url " +
				"(a cluster member's client port; a standalone node opens one with --nats-listen and APPRUN_CLUSTER_SECRET), " +
				"or stop the node and audit its --data")
		}
		dir, err := os.MkdirTemp("", "apprun-audit-")
		if err != nil {
			return nil, nil, cleanup, err
		}
		cleanup = func() { os.RemoveAll(dir) }
		path = filepath.Join(dir, "projections.db")
		if err := fetchSnapshot(ctx, o.Node, o.AdminToken, path); err != nil {
			cleanup()
			return nil, nil, func() {}, fmt.Errorf("audit: %w", err)
		}
	}
	store, damage, err = projections.OpenExclusive(path)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		err = fmt.Errorf("audit: %s holds no apprun data (no projections.db): nothing to audit; check --data", o.DataDir)
	case err != nil && o.Node == "":
		err = fmt.Errorf("audit: %w (is apprun still running on this data directory? a running node is audited with --node and --nats-url)", err)
	case err != nil:
		err = fmt.Errorf("audit: the node's snapshot: %w", err)
	}
	if err != nil {
		cleanup()
		return nil, nil, func() {}, err
	}
	return store, damage, cleanup, nil
}

// fetchSnapshot writes the node's read-model snapshot to path.
func fetchSnapshot(ctx context.Context, node, token, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(node, "/")+snapshotPath, nil)
	if err != nil {
		return fmt.Errorf("--node %s: %w", node, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the node's read models: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var env struct {
			Error struct{ Code, Message string }
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(body, &env) == nil && env.Error.Code != "" {
			return fmt.Errorf("the node's read models: %s: %s (%s)", resp.Status, env.Error.Message, env.Error.Code)
		}
		return fmt.Errorf("the node's read models: %s", resp.Status)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("the node's read models: %w", err)
	}
	return nil
}
