package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
)

// BenchmarkGroupedAdmissions measures whether admissions batched per
// node would help a cluster's creates (issue 50 suggested it): the
// probe's admission batches on the cluster scenario's 3-process R3
// cluster, 32 admissions in flight, each in its own atomic batch or
// grouped g to a batch (distinct accounts, slots and runs, so that one
// batch may hold them). BENCHMARKS.md cites it:
//
//	go test ./bench -run '^$' -bench GroupedAdmissions -benchtime 8s
func BenchmarkGroupedAdmissions(b *testing.B) {
	ctx := context.Background()
	nc, stop, err := bareProcesses(ctx, testBinary(b))
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	var probes []*probe
	deadline := time.Now().Add(60 * time.Second)
	for { // the new cluster may still be electing its leaders
		svc, ports, err := preparedEngine(ctx, nc, bareLimits, clusterNodes, true, apps.TestSleep())
		if err == nil {
			for i := range 32 {
				p, err := newProbe(ctx, svc, ports, apps.TestSleep().Slug, 1_000_000_000, 1+i*1_000_000)
				if err != nil {
					b.Fatal(err)
				}
				probes = append(probes, p)
			}
			break
		}
		if time.Now().After(deadline) {
			b.Fatal(err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, g := range []int{1, 2, 4, 8, 16, 32} {
		b.Run(fmt.Sprintf("group=%d", g), func(b *testing.B) {
			var left atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			start := time.Now()
			for w := range len(probes) / g {
				wg.Go(func() {
					for left.Add(-int64(g)) > -int64(g) {
						if err := admitGroup(ctx, probes[w*g:(w+1)*g]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "admissions/s")
		})
	}
}

// admitGroup writes one admission of each probe in one atomic batch,
// and moves each probe on as its own admission would.
func admitGroup(ctx context.Context, ps []*probe) error {
	var all []port.Entry
	var counts []int
	var charges []ledger.Event
	for _, p := range ps {
		_, charge, entries, err := p.e.AdmissionWrites(p.acct, p.acctSeq, p.keyID, p.price, p.slot, time.Now().UTC())
		if err != nil {
			return err
		}
		p.slot++
		all, counts, charges = append(all, entries...), append(counts, len(entries)), append(charges, charge)
	}
	seq, err := ps[0].ports.Log.Append(ctx, all...)
	if err != nil {
		return err
	}
	first, off := seq-uint64(len(all)-1), 0 // an atomic batch is stored contiguously
	for i, p := range ps {                  // each admission's charge is its first message
		p.acct, p.acctSeq = ledger.Apply(p.acct, charges[i]), first+uint64(off)
		p.acct.Head = ledger.Hash(all[off].Data)
		off += counts[i]
	}
	return nil
}
