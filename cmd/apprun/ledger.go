package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/node"
)

// ledgerCmd is `apprun ledger`: the ledger's signing key.
func (x *cli) ledgerCmd() *command {
	c := newCommand("ledger", "", "the ledger's signing key: make one, print its public key")
	c.about = `Ledger makes and shows the Ed25519 key that signs every account event
(docs/guarantees.md). Keep the signing key outside the data directory and
give it to every node as APPRUN_LEDGER_SIGNING_KEY; give the public key
to whoever audits the log.`
	return c.add(x.ledgerNewKeyCmd(), x.ledgerPublicKeyCmd())
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
