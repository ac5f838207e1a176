package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"
)

// BenchmarkCreateRun measures POST /api/v1/runs through the real stack
// (HTTP, auth, validation, one atomic JetStream batch with SyncAlways, and
// the wait for the read model), spread over many accounts, limits off.
//
//	go test ./cmd/apprun -run '^$' -bench CreateRun -benchtime 2000x
func BenchmarkCreateRun(b *testing.B) {
	h := Start(b, WithLimits(NoLimits))
	accts := make([]Account, 64)
	for i := range accts {
		accts[i] = h.Account(1_000_000)
	}
	var n atomic.Int64
	b.SetParallelism(16) // 32 concurrent clients on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a := accts[n.Add(1)%int64(len(accts))]
			if r := h.Do("POST", "/api/v1/runs", a.Key, ColdEmailRun()); r.Status != 201 {
				b.Errorf("create: %d %s", r.Status, r.Body)
				return
			}
		}
	})
}

// BenchmarkGetRun measures GET /api/v1/runs/{run_no} with authentication
// and the read rate limit enforced (set high, not off).
//
//	go test ./cmd/apprun -run '^$' -bench GetRun -benchtime 20000x
func BenchmarkGetRun(b *testing.B) {
	h, a, runNo := readBench(b)
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if r := h.Do("GET", "/api/v1/runs/"+runNo, a.Key, nil); r.Status != 200 {
				b.Errorf("get: %d %s", r.Status, r.Body)
				return
			}
		}
	})
}

// BenchmarkGetRunHandler is BenchmarkGetRun without the network: the
// node's handler (the edge, routing, authentication, the read limit, the
// read model and the answer) called directly, so that its CPU and
// allocations per read show apart from net/http's and the client's.
//
//	go test ./cmd/apprun -run '^$' -bench GetRunHandler -benchmem
func BenchmarkGetRunHandler(b *testing.B) {
	h, a, runNo := readBench(b)
	handler := h.Node.Handler()
	req := httptest.NewRequest("GET", "/api/v1/runs/"+runNo, nil)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := &answer{header: make(http.Header)}
		handler.ServeHTTP(w, req)
		if w.code != 200 {
			b.Fatalf("get: %d", w.code)
		}
	}
}

// answer is the least a ResponseWriter does (a fresh header map, the
// status, the body dropped, deadlines taken as net/http takes them), so
// that BenchmarkGetRunHandler measures the handler rather than a
// recorder's buffer or the errors a writer without deadlines gives the
// edge.
type answer struct {
	header http.Header
	code   int
}

func (w *answer) Header() http.Header { return w.header }

func (w *answer) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *answer) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(b), nil
}

func (w *answer) SetReadDeadline(time.Time) error  { return nil }
func (w *answer) SetWriteDeadline(time.Time) error { return nil }

// readBench is a node whose read limit is set too high to refuse, with a
// finished cold-email-writer run and the account that owns it.
func readBench(b *testing.B) (*Harness, Account, string) {
	h := Start(b, WithLimits(NoLimits))
	h.Cfg.Limits.ReadsPerMinute = 1_000_000_000
	h.Restart()
	a := h.Account(100)
	runNo := h.Create(a, ColdEmailRun())
	h.WaitRun(a, runNo)
	return h, a, runNo
}
