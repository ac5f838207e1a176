package projections

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"

	gojson "github.com/goccy/go-json"

	"github.com/apprun/apprun/port"
	bolt "go.etcd.io/bbolt"
)

// Every value in the file ends with a CRC-32C of its key and value, so a
// record changed on disk (a flipped bit, random bytes over a page) is
// found when it is read instead of being served as if valid. bbolt checks
// its own meta pages but not the data it stores.

// ErrDamaged marks a stored record that fails its checksum or does not
// decode: the file is damaged, and its records must not be trusted.
var ErrDamaged = errors.New("projections: damaged record")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const sumLen = 4

func checksum(key, val []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, key), castagnoli, val)
}

// seal returns val followed by its checksum.
func seal(key, val []byte) []byte {
	out := make([]byte, len(val)+sumLen)
	copy(out, val)
	binary.BigEndian.PutUint32(out[len(val):], checksum(key, val))
	return out
}

// unseal checks a stored value's checksum and returns the value without it.
func unseal(key, stored []byte) ([]byte, error) {
	if len(stored) < sumLen {
		return nil, fmt.Errorf("%w: key %q: value too short for its checksum", ErrDamaged, key)
	}
	val := stored[:len(stored)-sumLen]
	if binary.BigEndian.Uint32(stored[len(val):]) != checksum(key, val) {
		return nil, fmt.Errorf("%w: key %q: checksum mismatch", ErrDamaged, key)
	}
	return val, nil
}

// put stores a value sealed with its checksum.
func put(b *bolt.Bucket, key, val []byte) error {
	return b.Put(key, seal(key, val))
}

// get reads a sealed value: engine.ErrNotFound when absent, ErrDamaged when
// its checksum fails.
func get(b *bolt.Bucket, key []byte) ([]byte, error) {
	stored := b.Get(key)
	if stored == nil {
		return nil, port.ErrNotFound
	}
	return unseal(key, stored)
}

func getJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := get(b, key)
	if err != nil {
		return err
	}
	return decode(key, data, v)
}

// decode reads a record's JSON; a record that does not decode is damaged.
// It decodes with goccy/go-json, which reads the applier's accounts and
// runs in about half encoding/json's time (BENCHMARKS.md, fourteenth
// pass); FuzzRecordDecodersAgree holds it to encoding/json. What goccy
// refuses is decoded again, into a zeroed v, by encoding/json, which
// says what is wrong.
func decode(key, data []byte, v any) error {
	if gojson.Unmarshal(data, v) == nil {
		return nil
	}
	reflect.ValueOf(v).Elem().SetZero() // nothing goccy half-decoded is kept
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: key %q: does not decode (%v)", ErrDamaged, key, err)
	}
	return nil
}

// unsealJSON checks and decodes a value met by a cursor.
func unsealJSON(key, stored []byte, v any) error {
	data, err := unseal(key, stored)
	if err != nil {
		return err
	}
	return decode(key, data, v)
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := gojson.Marshal(v)
	if err != nil {
		return err
	}
	return put(b, key, data)
}

// getU64 reads a sealed 8-byte counter or sequence; 0 when absent.
func getU64(b *bolt.Bucket, key []byte) (uint64, error) {
	v, err := get(b, key)
	if errors.Is(err, port.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: key %q: %d bytes, want 8", ErrDamaged, key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
