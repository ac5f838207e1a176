package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/apprun/apprun/embednats"
)

// BenchmarkAdmission measures CreateRun (price and account reads, the
// atomic batch) with the shipped fsync policy and without it, so the cost
// of SyncAlways is a measured figure:
//
//	go test ./engine -run '^$' -bench Admission -benchtime 3000x
func BenchmarkAdmission(b *testing.B) {
	for _, sync := range []bool{true, false} {
		b.Run(fmt.Sprintf("sync_always=%v", sync), func(b *testing.B) {
			ns, _ := embednats.New(embednats.Config{StoreDir: b.TempDir(), NoSync: !sync})
			if err := ns.Start(); err != nil {
				b.Fatal(err)
			}
			defer ns.Stop()
			nc, _ := ns.Connect()
			defer nc.Close()
			idle := App{Slug: "idle", Name: "idle", Price: 1, Runnable: true, InputSchema: []byte(`{"type":"object"}`),
				Executor: ExecutorFunc(func(ctx context.Context, _ Job, _ func(Step)) (Result, error) { return Result{}, nil })}
			cat, _ := NewCatalog(idle)
			e, _ := New(nc, Config{Catalog: cat, Reads: &brandMap{m: map[string]BrandContext{}}, Workers: 1,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err := e.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer e.Stop()
			e.exec.stop() // measure admission alone
			accts := make([]NewAccount, 64)
			for i := range accts {
				accts[i], _ = e.OpenAccount(context.Background(), "a@example.com", 1_000_000)
			}
			var n atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					a := accts[n.Add(1)%int64(len(accts))]
					if _, err := e.CreateRun(context.Background(), CreateRunRequest{AccountID: a.AccountID, KeyID: a.KeyID, AppSlug: "idle", Input: map[string]any{}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkEventAppend measures one run-event write (a single publish with
// compare-and-set on the run's subject), with and without SyncAlways.
//
//	go test ./engine -run '^$' -bench EventAppend -benchtime 5000x
func BenchmarkEventAppend(b *testing.B) {
	for _, sync := range []bool{true, false} {
		b.Run(fmt.Sprintf("sync_always=%v", sync), func(b *testing.B) {
			ns, _ := embednats.New(embednats.Config{StoreDir: b.TempDir(), NoSync: !sync})
			if err := ns.Start(); err != nil {
				b.Fatal(err)
			}
			defer ns.Stop()
			nc, _ := ns.Connect()
			defer nc.Close()
			cat, _ := NewCatalog(okApp())
			e, _ := New(nc, Config{Catalog: cat, Reads: &brandMap{m: map[string]BrandContext{}},
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err := e.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer e.Stop()
			var n atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := &runWriter{e: e, run: Run{RunNo: newID(PrefixRun, 10)}}
				for pb.Next() {
					if err := w.write(context.Background(), RunEvent{Type: ToolRunning, Step: &Step{Index: int(n.Add(1))}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
