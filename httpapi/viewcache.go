package httpapi

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/apprun/apprun/engine"
)

// maxViews bounds the encoded-run cache; when full, an arbitrary entry
// makes room.
const maxViews = 20_000

// viewCache keeps the encoded JSON answer of each recently read run, keyed
// by the run and the sequence of its last event: a finished run's answer
// (up to the whole report) is encoded once, not on every status read.
type viewCache struct {
	mu sync.Mutex
	m  map[string]encodedView
}

type encodedView struct {
	seq  uint64
	body []byte
}

func newViewCache() *viewCache { return &viewCache{m: map[string]encodedView{}} }

// body is run's answer, encoded now or earlier at the same last event.
func (c *viewCache) body(run engine.Run) ([]byte, error) {
	c.mu.Lock()
	v, ok := c.m[run.RunNo]
	c.mu.Unlock()
	if ok && v.seq == run.LastSeq {
		return v.body, nil
	}
	body, err := json.Marshal(viewOf(run))
	if err != nil {
		return nil, err
	}
	body = append(body, '\n')
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxViews {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[run.RunNo] = encodedView{seq: run.LastSeq, body: body}
	return body, nil
}

// writeRaw writes an already encoded JSON answer. Its two headers' values
// are shared, read-only slices in canonical form, as Header.Set would
// store them but without its allocation and canonicalisation on every
// read (a later Header.Set or Add replaces or copies them).
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = hdrJSON
	h["Cache-Control"] = hdrNoStore
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

var (
	hdrJSON    = []string{"application/json"}
	hdrNoStore = []string{"no-store"}
)
