package projections

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Snapshot writes a consistent copy of the read models, as of one
// moment (one read transaction), to a new file at path, and says through
// which sequence of the log that copy applied it. A live audit compares
// it with the log without opening the file a running node holds
// (audit.Options.Node). The copy is made on this machine's disk first, so
// the transaction is short whoever reads the copy, and slowly.
func (s *Store) Snapshot(path string) (applied uint64, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			if applied, err = getU64(meta, keyApplied); err != nil {
				return err
			}
		}
		return tx.CopyFile(path, 0o600)
	})
	if err != nil {
		return 0, fmt.Errorf("projections: snapshot: %w", err)
	}
	return applied, nil
}
