package bench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/embednats"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/projections"
	"github.com/apprun/apprun/subjects"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// replayScenario measures a projection rebuild from a long log and the
// resume of a long run log over SSE.
func replayScenario(ctx context.Context, cfg Config, s *Scenario) error {
	n, un, rounds, t, ut, err := rebuilds(ctx, cfg)
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	// n and un are over every rebuild of each log (twice each, or once
	// for a small log): so are the times.
	s.add("events rebuilt", float64(n), "events")
	s.add("rebuild time", t.rebuild.Seconds(), "s")
	s.add("reopen with damage check", t.reopen.Seconds()/float64(rounds), "s")
	s.note("reopen: opening the rebuilt projections file again, which checks every page and every record's checksum before the node serves from it")
	rate, bare := float64(n)/t.rebuild.Seconds(), float64(n)/t.bare.Seconds()
	s.atLeast("rebuild rate", rate, "events/s", 300_000)
	s.add("bare replay rate", bare, "events/s")
	s.add("rebuild ÷ bare replay", rate/bare, "")
	unsigned := float64(un) / ut.rebuild.Seconds()
	s.add("rebuild rate, unsigned ledger", unsigned, "events/s")
	s.add("rebuild ÷ bare replay, unsigned ledger", unsigned/(float64(un)/ut.bare.Seconds()), "")
	s.add("rebuild: signed ÷ unsigned ledger", rate/unsigned, "")
	perEvent := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
	s.add("rebuild CPU per event", perEvent(t.rebuildCPU), "µs")
	s.add("rebuild CPU per event, unsigned ledger", float64(ut.rebuildCPU.Nanoseconds())/1e3/float64(un), "µs")
	s.add("bare replay CPU per event", perEvent(t.bareCPU), "µs")
	s.note("CPU per event: the process's user and system time over the phase (JetStream runs in it) divided by the events; %d CPUs give %.1f µs of CPU per event at 300,000 events/s", runtime.NumCPU(), float64(runtime.NumCPU())*1e6/300_000)
	s.note("bare replay: an ordered consumer on the same log that only reads each message's sequence, as the projections' consumer does before it decodes (projections.StreamSeq), pulling as much at a time (projections.ReplayPull); the rebuild's ceiling on this machine")
	s.note("rebuild: a synthetic log of %d events shaped like real traffic (accounts, then runs of 14 events each: charge, slot, job, created, started, 6 steps, completed, settle, slot release) replayed into a new projections file by the node's own applier, on the embedded JetStream with SyncAlways; its account events signed and linked as a node writes them. Unsigned: a log of the same traffic with its account events unsigned, as before the ledger was signed. Each log rebuilt twice, in the order signed, unsigned, unsigned, signed; the figures are over both rebuilds", n/2)

	if err := measureResume(ctx, cfg, s, "", cfg.ResumeEvents, 50, 5); err != nil {
		return err
	}
	s.note("resume: GET /events with Last-Event-ID before the first event of a finished %d-event run, timed from the request to the terminal event received (a stream cut before it is opened again after the last id, as EventSource does, within the time), after 5 to warm up", cfg.ResumeEvents)
	if cfg.ResumeLongEvents > 0 {
		// 30 timed: with 8, the p50 of one run ranged over 90–215 ms on
		// this machine for one build (BENCHMARKS.md, sixth pass).
		if err := measureResume(ctx, cfg, s, "long ", cfg.ResumeLongEvents, 30, 150); err != nil {
			return err
		}
		s.note("long resume: the same with a finished %d-event run", cfg.ResumeLongEvents)
	}
	return nil
}

// measureResume times resuming a finished run of events events, times
// times, and reports it as <label>resume against a p50 target in ms.
func measureResume(ctx context.Context, cfg Config, s *Scenario, label string, events, times int, target float64) error {
	sum, got, err := resume(ctx, cfg, events, times)
	if err != nil {
		return fmt.Errorf("%sresume: %w", label, err)
	}
	s.add(label+"run log resumed", float64(got), "events")
	s.atMost(label+"resume p50", ms(sum.P50), "ms", target)
	s.add(label+"resume p99", ms(sum.P99), "ms")
	s.add(label+"resume max", ms(sum.Max), "ms")
	s.add(label+"resumes timed", float64(sum.N), "")
	return nil
}

// rebuildTimes are what rebuild measured.
type rebuildTimes struct {
	rebuild, reopen, bare time.Duration
	// rebuildCPU and bareCPU are the CPU time the process used in each.
	rebuildCPU, bareCPU time.Duration
}

// add adds o's times to t.
func (t *rebuildTimes) add(o rebuildTimes) {
	t.rebuild += o.rebuild
	t.reopen += o.reopen
	t.bare += o.bare
	t.rebuildCPU += o.rebuildCPU
	t.bareCPU += o.bareCPU
}

// rebuilds writes two synthetic logs of the same traffic, one with its
// account events signed and linked as a node writes them and one
// unsigned (as before the ledger was signed), then times each rebuild
// twice, in the order signed, unsigned, unsigned, signed, so that a drift
// of the shared host's speed falls on both alike (a small log, the
// bench's own test's, once each). It returns the events rebuilt of each
// log over its rebuilds, how many each had, and their times summed.
func rebuilds(ctx context.Context, cfg Config) (n, un, rounds int, signed, unsigned rebuildTimes, err error) {
	dir, err := os.MkdirTemp("", "apprun-bench-replay-")
	if err != nil {
		return 0, 0, 0, signed, unsigned, err
	}
	defer os.RemoveAll(dir)
	sdir, udir := filepath.Join(dir, "signed"), filepath.Join(dir, "unsigned")
	slast, err := fixture(ctx, cfg, sdir, true)
	if err != nil {
		return 0, 0, 0, signed, unsigned, err
	}
	ulast, err := fixture(ctx, cfg, udir, false)
	if err != nil {
		return 0, 0, 0, signed, unsigned, err
	}
	var errs []error
	rounds = 2
	if cfg.ReplayEvents < 100_000 {
		rounds = 1 // a small log (the bench's own test): once each is enough
	}
	alternate(rounds, func() {
		t, err := rebuild(ctx, cfg, sdir, slast)
		signed.add(t)
		errs = append(errs, err)
	}, func() {
		t, err := rebuild(ctx, cfg, udir, ulast)
		unsigned.add(t)
		errs = append(errs, err)
	})
	return int(slast) * rounds, int(ulast) * rounds, rounds, signed, unsigned, errors.Join(errs...)
}

// fixture writes a synthetic log (synthesize) into a store under dir and
// returns its last sequence.
func fixture(ctx context.Context, cfg Config, dir string, signed bool) (last uint64, err error) {
	// Writing the fixture is not what is measured: no fsync for it.
	err = withNATS(filepath.Join(dir, "nats"), true, func(nc *nats.Conn) (err error) {
		last, err = synthesize(ctx, nc, cfg.ReplayEvents, signed)
		return err
	})
	if err == nil {
		fmt.Fprintf(cfg.Log, "bench: replay: %d events written (signed: %v)\n", last, signed)
	}
	return last, err
}

// rebuild times a fresh projection store under dir catching up with the
// log there (through last), opening the result again (the damage check),
// and a bare replay of the same log (bareReplay); then removes the store.
func rebuild(ctx context.Context, cfg Config, dir string, last uint64) (t rebuildTimes, err error) {
	fmt.Fprintf(cfg.Log, "bench: replay: rebuilding %s\n", filepath.Base(dir))
	path := filepath.Join(dir, "projections.db")
	defer os.Remove(path)
	err = withNATS(filepath.Join(dir, "nats"), false, func(nc *nats.Conn) error {
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		p, err := projections.Open(path, quiet)
		if err != nil {
			return err
		}
		name := "rebuild" // the signed log's; the unsigned one's apart
		if filepath.Base(dir) != "signed" {
			name += "-" + filepath.Base(dir)
		}
		profiled := profileProcess(cfg, name)
		start, cpu := time.Now(), cpuTime()
		if err := p.Start(ctx, js, eventlog.StreamName); err != nil {
			profiled()
			p.Close()
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		err = p.WaitFor(wctx, last)
		t.rebuild, t.rebuildCPU = time.Since(start), cpuTime()-cpu
		profiled()
		p.Close()
		if err != nil {
			return err
		}
		start = time.Now()
		if p, err = projections.Open(path, quiet); err != nil {
			return err
		}
		t.reopen = time.Since(start)
		if err := p.Close(); err != nil {
			return err
		}
		cpu = cpuTime()
		t.bare, err = bareReplay(wctx, js, last)
		t.bareCPU = cpuTime() - cpu
		return err
	})
	return t, err
}

// bareReplay times an ordered consumer reading the whole stream up to
// sequence last and doing nothing with it but read each message's
// sequence: what JetStream and the client library alone take to replay
// the log, against which the rebuild is measured.
func bareReplay(ctx context.Context, js jetstream.JetStream, last uint64) (time.Duration, error) {
	start := time.Now()
	cons, err := js.OrderedConsumer(ctx, eventlog.StreamName, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return 0, err
	}
	reached := make(chan struct{})
	var once sync.Once
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if seq, err := projections.StreamSeq(m.Reply()); err == nil && seq >= last {
			once.Do(func() { close(reached) })
		}
	}, projections.ReplayPull(js.Conn().MaxPayload()))
	if err != nil {
		return 0, err
	}
	defer cc.Stop()
	select {
	case <-reached:
		return time.Since(start), nil
	case <-ctx.Done():
		return 0, fmt.Errorf("bare replay: %w", ctx.Err())
	}
}

// withNATS runs fn on an embedded server over store (fsync on every write
// unless noSync, which only fixture writing uses).
func withNATS(store string, noSync bool, fn func(*nats.Conn) error) error {
	ns, err := embednats.New(embednats.Config{StoreDir: store, NoSync: noSync, MaxMemory: 1 << 30, MaxStore: 64 << 30})
	if err != nil {
		return err
	}
	if err := ns.Start(); err != nil {
		return err
	}
	defer ns.Stop()
	nc, err := ns.Connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	return fn(nc)
}

// synthesize writes about n events shaped like real traffic and returns
// the last sequence. With signed, account events are signed and linked
// as a node writes them (ledger/chain.go); without, unsigned, as before
// the ledger was signed.
func synthesize(ctx context.Context, nc *nats.Conn, n int, signed bool) (uint64, error) {
	e, _, err := preparedEngine(ctx, nc, engine.Limits{}, 1, false, apps.Default()...)
	if err != nil {
		return 0, err
	}
	var signer *ledger.Signer
	if signed {
		if signer, err = newSigner(); err != nil {
			return 0, err
		}
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return 0, err
	}
	var last uint64
	type msg struct {
		subj string
		data []byte
	}
	encode := func(v any) []byte {
		data, err := json.Marshal(v)
		if err != nil {
			panic(err) // the bench's own values
		}
		return data
	}
	// account encodes ev, an event of a's, signed when signed, and makes
	// it a's head: the next event's prev.
	account := func(a *ledger.Account, ev ledger.Event) (msg, error) {
		*a = ledger.Apply(*a, ev)
		if signer != nil {
			var err error
			if ev, err = signer.Sign(ev); err != nil {
				return msg{}, err
			}
		}
		data := encode(ev)
		a.Head = ledger.Hash(data)
		return msg{subjects.Of(subjects.KindAccount, a.ID), data}, nil
	}
	publish := func(m msg) error { return publishWaiting(ctx, js, m.subj, m.data) }
	const accounts = 1000
	accts := make([]ledger.Account, accounts)
	now := time.Now().UTC()
	for i := range accts {
		id := fmt.Sprintf("acct_bench%06d", i)
		ev, err := ledger.Open(id, "bench@example.com", ledger.MaxGrant, now, ledger.By{Actor: "system:bench"})
		if err != nil {
			return 0, err
		}
		m, err := account(&accts[i], ev)
		if err != nil {
			return 0, err
		}
		if err := publish(m); err != nil {
			return 0, err
		}
	}
	output := json.RawMessage(sampleOutput)
	written := accounts
	for r := 0; written < n; r++ {
		a := &accts[r%accounts]
		at := now.Add(time.Duration(r) * time.Millisecond)
		runNo := engine.NewRunNo(rand.Reader, at) // as the engine makes them: their order matters to bbolt
		slot := subjects.Of(subjects.KindSlot, strconv.Itoa(1+r%12))
		run := subjects.Of(subjects.KindRun, runNo)
		ev, err := ledger.Charge(*a, runNo, "cold-email-writer", 5, 0, at)
		if err != nil {
			return 0, err
		}
		charge, err := account(a, ev)
		if err != nil {
			return 0, err
		}
		if ev, err = ledger.Settle(*a, runNo, "cold-email-writer", at); err != nil {
			return 0, err
		}
		settle, err := account(a, ev)
		if err != nil {
			return 0, err
		}
		msgs := []msg{
			charge,
			{slot, encode(engine.SlotEvent{Type: "slot_claimed", V: 1, RunNo: runNo})},
			{subjects.Of(subjects.KindJob, runNo), encode(engine.JobEvent{Type: "run_queued", V: 1, RunNo: runNo})},
			{run, encode(engine.RunEvent{Type: engine.RunCreated, V: 1, At: at, RunNo: runNo, Created: &engine.Created{AccountID: a.ID, KeyID: "key_bench", AppSlug: "cold-email-writer", Input: json.RawMessage(`{"product_description":"Acme Ledger","target_role":"Founders"}`), CreditCost: 5}})},
			{run, encode(engine.RunEvent{Type: engine.RunStarted, V: 1, At: at, RunNo: runNo})},
		}
		for i := 1; i <= 6; i++ {
			msgs = append(msgs, msg{run, encode(engine.RunEvent{Type: engine.ToolRunning, V: 1, At: at, RunNo: runNo, ToolRun: &engine.ToolRun{Step: &engine.Step{Index: i, Total: 6, Tool: "write", Message: "writing"}}})})
		}
		msgs = append(msgs,
			msg{run, encode(engine.RunEvent{Type: engine.RunCompleted, V: 1, At: at, RunNo: runNo, Completed: &engine.Completed{Summary: "3 emails", Output: output}})},
			settle,
			msg{slot, encode(engine.SlotEvent{Type: "slot_released", V: 1, RunNo: runNo})})
		for _, m := range msgs {
			if err := publish(m); err != nil {
				return 0, err
			}
		}
		written += len(msgs)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		return 0, fmt.Errorf("synthetic log not acknowledged within 5 minutes")
	}
	if last, err = e.LogHead(ctx); err != nil {
		return 0, err
	}
	return last, ledgerCopied(ctx, js)
}

// ledgerCopied waits until the server has copied the log's ledger
// messages into the ledger stream (eventlog.LedgerStreamName): the copy
// is the fixture's, not a cost of the rebuild measured after it.
func ledgerCopied(ctx context.Context, js jetstream.JetStream) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		st, err := js.Stream(ctx, eventlog.LedgerStreamName)
		if err != nil {
			return fmt.Errorf("the ledger stream: %w", err)
		}
		if src := st.CachedInfo().Sources; len(src) == 1 && src[0].Lag == 0 && src[0].Active >= 0 && src[0].Active < time.Second {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the ledger stream did not catch up with the fixture: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sampleOutput is a cold-email-writer report of the usual size.
const sampleOutput = `{"emails":[` +
	`{"step":1,"send_day":0,"subject":"Bookkeeping that closes itself","body":"Hi {{first_name}},\n\nAgency founders tell us month-end eats two days. Acme Ledger reconciles as you go, so the close takes an hour.\n\nWorth a 15-minute look next week?\n\nBest,\n{{sender_name}}"},` +
	`{"step":2,"send_day":3,"subject":"Re: Bookkeeping that closes itself","body":"Hi {{first_name}},\n\nOne number: agencies on Acme Ledger close their books 4x faster. Happy to show you how in 15 minutes.\n\nBest,\n{{sender_name}}"},` +
	`{"step":3,"send_day":7,"subject":"Should I close the loop?","body":"Hi {{first_name}},\n\nI'll stop here. If month-end ever becomes the bottleneck, reply and I'll send a 2-minute walkthrough.\n\nBest,\n{{sender_name}}"}` +
	`],"language":"en","cta_goal":"book_call"}`

// resume creates a run with a long log, waits for its end, then times
// resuming its event stream from before the first event.
func resume(ctx context.Context, cfg Config, events, times int) (summary, int, error) {
	cfg.URL = "" // a server of its own: the long run is the test App's
	srv, key, err := serverAndKey(ctx, cfg)
	if err != nil {
		return summary{}, 0, err
	}
	defer srv.Stop()
	// created, started, the ticks and completed make ResumeEvents events.
	runNo, err := srv.create(ctx, key, sleepRun(0, events-3))
	if err != nil {
		return summary{}, 0, err
	}
	if _, err := awaitFinished(ctx, srv, key, "/api/v1/runs/"+runNo); err != nil {
		return summary{}, 0, err
	}
	client := newClient()
	lat := &latencies{}
	streamed := 0
	for i := range 5 + times {
		t := time.Now()
		count, err := followToEnd(ctx, srv, client, key, runNo)
		if err != nil {
			return summary{}, 0, err
		}
		if i >= 5 { // the first few warm up
			lat.add(time.Since(t))
		}
		streamed = count + 1 // the created event is in the log, not on the stream
	}
	return lat.summary(), streamed, nil
}

// followToEnd reads a run's event stream from its first event to its
// terminal one as an EventSource does: a stream cut before the end (a
// busy machine, a node's write wait) is opened again with Last-Event-ID,
// and the time the resume took is part of the figure, not a failed bench.
// It returns how many events it received, each once.
func followToEnd(ctx context.Context, srv *Server, client *http.Client, key, runNo string) (int, error) {
	const maxCuts = 10
	last, count := uint64(1), 0
	for cuts := 0; ; cuts++ {
		done := false
		err := srv.stream(ctx, client, key, runNo, last, nil, func(ev event) bool {
			if ev.ID <= last {
				return true // sent before the cut
			}
			last = ev.ID
			count++
			done = terminal(ev.Type)
			return !done
		})
		var status statusError
		switch {
		case done:
			return count, nil
		case ctx.Err() != nil:
			return count, ctx.Err()
		case errors.As(err, &status):
			return count, err
		case cuts == maxCuts:
			return count, fmt.Errorf("cut %d times before the terminal event (last id %d): %v", cuts+1, last, err)
		}
	}
}

// publishWaiting publishes asynchronously, and waits for the outstanding
// acknowledgements whenever there are too many of them (the client
// refuses with ErrTooManyStalledMsgs once its stall wait, 200 ms, runs
// out): a loaded machine gives a slower fixture, never a failed bench
// (issue 50: "rebuild: nats: stalled with too many outstanding async
// published messages"). opts are the publish's own (the test's short
// stall wait).
func publishWaiting(ctx context.Context, js jetstream.JetStream, subj string, data []byte, opts ...jetstream.PublishOpt) error {
	for {
		_, err := js.PublishAsync(subj, data, opts...)
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			return err
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
