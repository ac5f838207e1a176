package main

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/node"
)

// ledgerCmd is `apprun ledger`: the ledger's signing key.
func (x *cli) ledgerCmd() *command {
	c := newCommand("ledger", "", "the ledger's signing key and checkpoints")
	c.about = `Ledger makes and shows the Ed25519 key that signs every account event
and checkpoint (docs/guarantees.md), and fetches the log's signed
checkpoint. Keep the signing key outside the data directory and give it
to every node as APPRUN_LEDGER_SIGNING_KEY; give the public key to
whoever audits the log, and keep checkpoints where the node cannot reach.`
	return c.add(x.ledgerNewKeyCmd(), x.ledgerPublicKeyCmd(), x.ledgerCheckpointCmd())
}

func (x *cli) ledgerCheckpointCmd() *command {
	c := newCommand("checkpoint", "", "print the log's signed checkpoint as of now, to keep")
	c.about = `Checkpoint asks the server at --url to write the log's checkpoint when
account events came since its newest, and prints the newest as the log
stores it. Keep the file away from the node: 'apprun audit --checkpoint
FILE' later proves the log still holds everything it names. The token is
--token, else APPRUN_ADMIN_TOKEN, else the dev credentials in
$APPRUN_DATA (./data).`
	url := c.flags.String("url", serverURL(), "apprun base URL (APPRUN_URL, else http://$APPRUN_ADDR)")
	token := c.flags.String("token", "", "admin token (APPRUN_ADMIN_TOKEN; else the dev credentials in $APPRUN_DATA)")
	c.env.bind("token", "APPRUN_ADMIN_TOKEN")
	c.exec = func([]string) error {
		var answer bytes.Buffer
		err := callAdmin(&answer, strings.TrimRight(*url, "/"), adminToken(*token), http.MethodPost, "/admin/v1/ledger/checkpoint", nil)
		if err != nil {
			x.stderr.Write(answer.Bytes())
			return err
		}
		_, err = x.stdout.Write(answer.Bytes())
		return err
	}
	return c
}

func (x *cli) ledgerNewKeyCmd() *command {
	c := newCommand("new-key", "<file>", "write a new signing key to a file (never replacing one)")
	c.minArgs, c.maxArgs = 1, 1
	c.exec = func(args []string) error {
		if err := node.WriteSigningKey(args[0]); err != nil {
			return err
		}
		key, err := node.ReadSigningKey(args[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(x.stderr, "wrote %s; its public key:\n", args[0])
		_, err = x.stdout.Write(ledger.PublicKeyPEM(key.Public().(ed25519.PublicKey)))
		return err
	}
	return c
}

func (x *cli) ledgerPublicKeyCmd() *command {
	c := newCommand("public-key", "", "print the public key of the signing key (PEM)")
	c.about = `Public-key prints the public key of APPRUN_LEDGER_SIGNING_KEY, else of
the key a standalone node made in its data directory (--data).`
	key := c.flags.String("key", "", "the signing key file (APPRUN_LEDGER_SIGNING_KEY)")
	c.env.bind("key", "APPRUN_LEDGER_SIGNING_KEY")
	dir := c.flags.String("data", "./data", "data directory (APPRUN_DATA)")
	c.env.bind("data", "APPRUN_DATA")
	c.exec = func([]string) error {
		pub, _, err := signingPublicKey(*key, *dir)
		if err != nil {
			return err
		}
		_, err = x.stdout.Write(ledger.PublicKeyPEM(pub))
		return err
	}
	return c
}

// signingPublicKey is the public key of the signing key file, else of the
// key in the data directory (fromDir).
func signingPublicKey(keyFile, dataDir string) (pub ed25519.PublicKey, fromDir bool, err error) {
	if keyFile == "" {
		keyFile, fromDir = filepath.Join(dataDir, node.DevSigningKeyFile), true
		if _, err := os.Stat(keyFile); errors.Is(err, os.ErrNotExist) {
			return nil, true, fmt.Errorf("no signing key: set APPRUN_LEDGER_SIGNING_KEY (or --key), or --data to a node's data directory that holds %s", node.DevSigningKeyFile)
		}
	}
	key, err := node.ReadSigningKey(keyFile)
	if err != nil {
		return nil, fromDir, err
	}
	return key.Public().(ed25519.PublicKey), fromDir, nil
}
