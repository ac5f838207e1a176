package node

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/apprun/apprun/ledger"
)

// DevSigningKeyFile is where a standalone node without
// APPRUN_LEDGER_SIGNING_KEY keeps the key it made, in its data directory.
const DevSigningKeyFile = "ledger-signing-key.pem"

// ledgerSigner is the key the node signs account events with: the file
// LedgerKeyFile names; else, on a standalone node, one it makes in its
// data directory, saying so. Nodes that share a log must sign with one
// key, so they need the file.
func (c Config) ledgerSigner(standalone bool, log *slog.Logger) (*ledger.Signer, error) {
	path := c.LedgerKeyFile
	if path == "" {
		if !standalone {
			return nil, errors.New("config: APPRUN_LEDGER_SIGNING_KEY is required when nodes share a log: every node signs the ledger with the same key")
		}
		path = filepath.Join(c.DataDir, DevSigningKeyFile)
		if err := WriteSigningKey(path); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("ledger signing key: %w", err)
		}
		log.Warn("the ledger's signing key is in the data directory: whoever can read the directory can sign history; set APPRUN_LEDGER_SIGNING_KEY to a file kept elsewhere (docs/guarantees.md)",
			"key", path)
	}
	key, err := ReadSigningKey(path)
	if err != nil {
		return nil, err
	}
	return ledger.NewSigner(key)
}

// ReadSigningKey reads the ledger's signing key from a PEM file.
func ReadSigningKey(path string) (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: the ledger signing key: %w", err)
	}
	key, err := ledger.ParseKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("config: the ledger signing key %s: %w", path, err)
	}
	return key, nil
}

// WriteSigningKey writes a new signing key to path, readable by its owner
// only; it never replaces a file (os.ErrExist).
func WriteSigningKey(path string) error {
	data, err := ledger.NewKeyPEM()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
