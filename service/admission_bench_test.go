package service_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"

	"github.com/apprun/apprun/service"
)

// BenchmarkAdmission measures CreateRun (price and account reads, the
// atomic batch) with the shipped fsync policy and without it, so the cost
// of SyncAlways is a measured figure:
//
//	go test ./service -run '^$' -bench Admission -benchtime 3000x
func BenchmarkAdmission(b *testing.B) {
	for _, sync := range []bool{true, false} {
		b.Run(fmt.Sprintf("sync_always=%v", sync), func(b *testing.B) {
			idle := engine.App{Slug: "idle", Name: "idle", Price: 1, Runnable: true, InputSchema: []byte(`{"type":"object"}`),
				Executor: engine.Executor(func(ctx context.Context, _ engine.Job, _ func(engine.Step)) (engine.Result, error) {
					return engine.Result{}, nil
				})}
			e := startEngine(b, sync, engine.Limits{}, idle)
			e.StopExecutor() // measure admission alone
			accts := make([]service.NewAccount, 64)
			for i := range accts {
				accts[i], _ = e.OpenAccount(context.Background(), "a@example.com", 1_000_000, ledger.By{Actor: "system:test", Reason: "test"})
			}
			var n atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					a := accts[n.Add(1)%int64(len(accts))]
					if _, err := e.CreateRun(context.Background(), service.CreateRunRequest{AccountID: a.AccountID, KeyID: a.KeyID, AppSlug: "idle", Input: map[string]any{}}); err != nil {
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
//	go test ./service -run '^$' -bench EventAppend -benchtime 5000x
func BenchmarkEventAppend(b *testing.B) {
	for _, sync := range []bool{true, false} {
		b.Run(fmt.Sprintf("sync_always=%v", sync), func(b *testing.B) {
			e := startEngine(b, sync, engine.Limits{}, okApp())
			var n atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				runNo, last := service.NewRunNo(), uint64(0)
				for pb.Next() {
					seq, err := e.WriteRunEvent(context.Background(), runNo, last, engine.RunEvent{Type: engine.ToolRunning, ToolRun: &engine.ToolRun{Step: &engine.Step{Index: int(n.Add(1))}}})
					if err != nil {
						b.Error(err)
						return
					}
					last = seq
				}
			})
		})
	}
}
