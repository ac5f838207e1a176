// Package logtest is the conformance suite of the engine's Log port: the
// JetStream log (package eventlog) and the simulated one (package simlog)
// both run it, so the simulation cannot drift from the real thing.
package logtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
)

var ids atomic.Int64

// uniq makes a subject of kind k that no other case uses.
func uniq(k subjects.Kind) string {
	return subjects.Of(k, fmt.Sprintf("logtest%d", ids.Add(1)))
}

func exp(seq uint64) *uint64 { return &seq }

// Run runs every case against the log open returns (one log may serve
// every case: each uses subjects of its own).
func Run(t *testing.T, open func(t *testing.T) port.Log) {
	ctx := context.Background()
	t.Run("last of an empty subject is ErrNoMessage", func(t *testing.T) {
		l := open(t)
		if _, err := l.Last(ctx, uniq(subjects.KindAccount)); !errors.Is(err, port.ErrNoMessage) {
			t.Fatalf("got %v, want ErrNoMessage", err)
		}
	})
	t.Run("compare-and-set", func(t *testing.T) {
		l := open(t)
		s := uniq(subjects.KindAccount)
		first, err := l.Append(ctx, port.Entry{Subject: s, Data: []byte(`1`), Expect: exp(0)})
		if err != nil || first == 0 {
			t.Fatalf("first write expecting no message: %d %v", first, err)
		}
		if _, err := l.Append(ctx, port.Entry{Subject: s, Data: []byte(`x`), Expect: exp(0)}); !errors.Is(err, port.ErrConflict) {
			t.Fatalf("second write expecting no message: %v, want ErrConflict", err)
		}
		if _, err := l.Append(ctx, port.Entry{Subject: s, Data: []byte(`x`), Expect: exp(first + 1000)}); !errors.Is(err, port.ErrConflict) {
			t.Fatalf("write expecting a wrong sequence: %v, want ErrConflict", err)
		}
		second, err := l.Append(ctx, port.Entry{Subject: s, Data: []byte(`2`), Expect: exp(first)})
		if err != nil || second <= first {
			t.Fatalf("write expecting the last sequence: %d %v", second, err)
		}
		m, err := l.Last(ctx, s)
		if err != nil || m.Seq != second || string(m.Data) != "2" || m.Subject != s {
			t.Fatalf("last: %+v %v, want seq %d data 2", m, err, second)
		}
	})
	t.Run("a batch is stored all or none", func(t *testing.T) {
		l := open(t)
		a, b, c := uniq(subjects.KindAccount), uniq(subjects.KindRun), uniq(subjects.KindSlot)
		seqA, err := l.Append(ctx, port.Entry{Subject: a, Data: []byte(`a0`)})
		if err != nil {
			t.Fatal(err)
		}
		head, _ := l.Head(ctx)
		// The last check fails: nothing of the batch is stored.
		_, err = l.Append(ctx,
			port.Entry{Subject: a, Data: []byte(`a1`), Expect: exp(seqA)},
			port.Entry{Subject: b, Data: []byte(`b1`), Expect: exp(0)},
			port.Entry{Subject: c, Data: []byte(`c1`), Expect: exp(7)})
		if !errors.Is(err, port.ErrConflict) {
			t.Fatalf("batch with a failing check: %v, want ErrConflict", err)
		}
		if after, _ := l.Head(ctx); after != head {
			t.Fatalf("a refused batch moved the head from %d to %d", head, after)
		}
		if m, _ := l.Last(ctx, a); m.Seq != seqA {
			t.Fatalf("a refused batch wrote %s: %+v", a, m)
		}
		if _, err := l.Last(ctx, b); !errors.Is(err, port.ErrNoMessage) {
			t.Fatalf("a refused batch wrote %s: %v", b, err)
		}
		// Every check holds: all stored, contiguous, in order.
		last, err := l.Append(ctx,
			port.Entry{Subject: a, Data: []byte(`a1`), Expect: exp(seqA)},
			port.Entry{Subject: b, Data: []byte(`b1`), Expect: exp(0)},
			port.Entry{Subject: c, Data: []byte(`c1`)})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range []string{a, b, c} {
			m, err := l.Last(ctx, s)
			if err != nil || m.Seq != last-2+uint64(i) {
				t.Fatalf("%s: %+v %v, want seq %d", s, m, err, last-2+uint64(i))
			}
		}
	})
	t.Run("a check may name another subject", func(t *testing.T) {
		l := open(t)
		price, job := uniq(subjects.KindPrice), uniq(subjects.KindJob)
		p1, err := l.Append(ctx, port.Entry{Subject: price, Data: []byte(`5`)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(ctx, port.Entry{Subject: price, Data: []byte(`7`)}); err != nil {
			t.Fatal(err)
		}
		_, err = l.Append(ctx, port.Entry{Subject: uniq(subjects.KindAccount), Data: []byte(`x`)},
			port.Entry{Subject: job, Data: []byte(`j`), Expect: exp(p1), ExpectSubject: price})
		if !errors.Is(err, port.ErrConflict) {
			t.Fatalf("job checked against a moved price: %v, want ErrConflict", err)
		}
		p2, _ := l.Last(ctx, price)
		if _, err := l.Append(ctx, port.Entry{Subject: uniq(subjects.KindAccount), Data: []byte(`x`)},
			port.Entry{Subject: job, Data: []byte(`j`), Expect: exp(p2.Seq), ExpectSubject: price}); err != nil {
			t.Fatalf("job checked against the current price: %v", err)
		}
	})
	t.Run("read returns a subject's messages after a sequence, in order", func(t *testing.T) {
		l := open(t)
		s, other := uniq(subjects.KindRun), uniq(subjects.KindRun)
		var seqs []uint64
		for i := range 5 {
			seq, err := l.Append(ctx, port.Entry{Subject: s, Data: fmt.Appendf(nil, "%d", i)})
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, seq)
			if _, err := l.Append(ctx, port.Entry{Subject: other, Data: []byte(`o`)}); err != nil {
				t.Fatal(err)
			}
		}
		var got []uint64
		err := l.Read(ctx, s, seqs[1], func(m port.Message) error {
			if m.Subject != s || string(m.Data) != fmt.Sprint(len(got)+2) {
				return fmt.Errorf("unexpected message %+v", m)
			}
			got = append(got, m.Seq)
			return nil
		})
		if err != nil || !slices.Equal(got, seqs[2:]) {
			t.Fatalf("read after %d: %v %v, want %v", seqs[1], got, err, seqs[2:])
		}
		stop := errors.New("stop")
		if err := l.Read(ctx, s, 0, func(port.Message) error { return stop }); !errors.Is(err, stop) {
			t.Fatalf("a handler's error: %v, want it back", err)
		}
		if err := l.Read(ctx, uniq(subjects.KindRun), 0, func(port.Message) error { return stop }); err != nil {
			t.Fatalf("read of an empty subject: %v", err)
		}
	})
	t.Run("a read with a wildcard returns every matching subject's messages, in order, each with its subject", func(t *testing.T) {
		l := open(t)
		acct := fmt.Sprintf("logtest%d", ids.Add(1))
		a, b := "apprun.whdel."+acct+".run_a.0", "apprun.whdel."+acct+".run_b.0"
		var want []port.Message
		for _, s := range []string{a, b, a, "apprun.whdel." + acct + ".run_a.1"} {
			seq, err := l.Append(ctx, port.Entry{Subject: s, Data: []byte(s)})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, port.Message{Subject: s, Seq: seq, Data: []byte(s)})
		}
		for _, c := range []struct {
			filter string
			want   []port.Message
		}{{"apprun.whdel." + acct + ".*.0", want[:3]}, {"apprun.whdel." + acct + ".>", want}, {"apprun.whdel." + acct + ".run_a.*", []port.Message{want[0], want[2], want[3]}}} {
			var got []port.Message
			err := l.Read(ctx, c.filter, want[0].Seq-1, func(m port.Message) error {
				got = append(got, m)
				return nil
			})
			if err != nil || len(got) != len(c.want) {
				t.Fatalf("read %s: %d messages (%v), want %d", c.filter, len(got), err, len(c.want))
			}
			for i, m := range got {
				if m.Subject != c.want[i].Subject || m.Seq != c.want[i].Seq || string(m.Data) != string(c.want[i].Data) {
					t.Fatalf("read %s: message %d is %s@%d, want %s@%d", c.filter, i, m.Subject, m.Seq, c.want[i].Subject, c.want[i].Seq)
				}
			}
		}
	})
	t.Run("purge and subjects", func(t *testing.T) {
		l := open(t)
		acct := fmt.Sprintf("logtest%d", ids.Add(1))
		d1 := "apprun.whdel." + acct + ".run_a.0"
		d2 := "apprun.whdel." + acct + ".run_b.0"
		for _, s := range []string{d1, d2, d1} {
			if _, err := l.Append(ctx, port.Entry{Subject: s, Data: []byte(`d`)}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := l.Subjects(ctx, "apprun.whdel."+acct+".>")
		slices.Sort(got)
		if err != nil || !slices.Equal(got, []string{d1, d2}) {
			t.Fatalf("subjects: %v %v", got, err)
		}
		if err := l.Purge(ctx, d1); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Last(ctx, d1); !errors.Is(err, port.ErrNoMessage) {
			t.Fatalf("last after purge: %v, want ErrNoMessage", err)
		}
		if _, err := l.Last(ctx, d2); err != nil {
			t.Fatalf("purge of one subject touched another: %v", err)
		}
	})
	t.Run("compact keeps the last message and its sequence", func(t *testing.T) {
		l := open(t)
		s := uniq(subjects.KindSlot)
		var last uint64
		for i := range 3 {
			seq, err := l.Append(ctx, port.Entry{Subject: s, Data: []byte(fmt.Sprintf(`%d`, i))})
			if err != nil {
				t.Fatal(err)
			}
			last = seq
		}
		if err := l.Compact(ctx, s); err != nil {
			t.Fatal(err)
		}
		var kept []uint64
		if err := l.Read(ctx, s, 0, func(m port.Message) error { kept = append(kept, m.Seq); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(kept, []uint64{last}) {
			t.Fatalf("after compact: %v, want only the last, %d", kept, last)
		}
		if m, err := l.Last(ctx, s); err != nil || m.Seq != last || string(m.Data) != "2" {
			t.Fatalf("last after compact: %+v %v", m, err)
		}
		if _, err := l.Append(ctx, port.Entry{Subject: s, Data: []byte(`3`), Expect: exp(last)}); err != nil {
			t.Fatalf("a compare-and-set on the kept message: %v", err)
		}
		if err := l.Compact(ctx, uniq(subjects.KindSlot)); err != nil {
			t.Fatalf("compact of an empty subject: %v", err)
		}
	})
	t.Run("a rollup leaves only itself on its subject, in a batch too", func(t *testing.T) {
		l := open(t)
		s, other := uniq(subjects.KindKeyUse), uniq(subjects.KindRun)
		for i := range 3 {
			if _, err := l.Append(ctx, port.Entry{Subject: s, Data: []byte(fmt.Sprintf(`%d`, i))}); err != nil {
				t.Fatal(err)
			}
		}
		prev, err := l.Last(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		last, err := l.Append(ctx, port.Entry{Subject: other, Data: []byte(`r`)},
			port.Entry{Subject: s, Data: []byte(`up`), Expect: exp(prev.Seq), Rollup: true})
		if err != nil {
			t.Fatalf("a rollup with a compare-and-set in a batch: %v", err)
		}
		var kept []string
		if err := l.Read(ctx, s, 0, func(m port.Message) error { kept = append(kept, string(m.Data)); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(kept, []string{"up"}) {
			t.Fatalf("after a rollup: %v, want only it", kept)
		}
		if m, err := l.Last(ctx, s); err != nil || m.Seq != last {
			t.Fatalf("last after rollup: %+v %v, want seq %d", m, err, last)
		}
		if _, err := l.Last(ctx, other); err != nil {
			t.Fatalf("a rollup touched another subject: %v", err)
		}
	})
	t.Run("of concurrent writers expecting the same sequence one wins", func(t *testing.T) {
		l := open(t)
		s := uniq(subjects.KindSlot)
		var wg sync.WaitGroup
		var won, lost atomic.Int64
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := l.Append(ctx, port.Entry{Subject: s, Data: []byte(`w`), Expect: exp(0)},
					port.Entry{Subject: uniq(subjects.KindRun), Data: []byte(`r`), Expect: exp(0)})
				switch {
				case err == nil:
					won.Add(1)
				case errors.Is(err, port.ErrConflict):
					lost.Add(1)
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if won.Load() != 1 || lost.Load() != 7 {
			t.Fatalf("%d won, %d lost; want 1 and 7", won.Load(), lost.Load())
		}
	})
	t.Run("concurrent batches each keep their own outcome", func(t *testing.T) {
		// 64 writers make counter increments on 8 shared subjects, each
		// with a run subject of its own, all at once (the JetStream log
		// commits such batches together: eventlog/group.go). Every
		// answer must be the truth: a stored batch is where its sequence
		// says, in order, a conflicting one is stored nowhere, and every
		// subject ends with exactly its stored increments.
		l := open(t)
		var counters [8]string
		for i := range counters {
			counters[i] = uniq(subjects.KindAccount)
		}
		type outcome struct {
			counter, run string
			seq          uint64
		}
		var mu sync.Mutex
		var stored []outcome
		var wg sync.WaitGroup
		for w := range 64 {
			wg.Go(func() {
				c := counters[w%len(counters)]
				for range 5 {
					last, err := l.Last(ctx, c)
					var expect uint64
					switch {
					case err == nil:
						expect = last.Seq
					case errors.Is(err, port.ErrNoMessage):
					default:
						t.Error(err)
						return
					}
					run := uniq(subjects.KindRun)
					seq, err := l.Append(ctx, port.Entry{Subject: c, Data: []byte(run), Expect: exp(expect)},
						port.Entry{Subject: run, Data: []byte(c), Expect: exp(0)})
					switch {
					case err == nil:
						mu.Lock()
						stored = append(stored, outcome{c, run, seq})
						mu.Unlock()
					case errors.Is(err, port.ErrConflict):
						if _, err := l.Last(ctx, run); !errors.Is(err, port.ErrNoMessage) {
							t.Errorf("a batch answered ErrConflict stored its run %s: %v", run, err)
						}
					default:
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if len(stored) < len(counters) {
			t.Fatalf("only %d batches stored", len(stored))
		}
		perCounter := map[string]int{}
		for _, o := range stored {
			m, err := l.Last(ctx, o.run)
			if err != nil || m.Seq != o.seq || string(m.Data) != o.counter {
				t.Fatalf("batch answered at %d: its run %s is %+v %v", o.seq, o.run, m, err)
			}
			perCounter[o.counter]++
		}
		for _, c := range counters {
			n := 0
			if err := l.Read(ctx, c, 0, func(m port.Message) error {
				n++
				if r, err := l.Last(ctx, string(m.Data)); err != nil || r.Seq != m.Seq+1 {
					return fmt.Errorf("increment %d of %s is not followed by its run: %+v %v", m.Seq, c, r, err)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if n != perCounter[c] {
				t.Fatalf("%s holds %d increments, %d were answered stored", c, n, perCounter[c])
			}
		}
		t.Logf("%d of 320 batches stored, the rest refused by a stale check", len(stored))
	})
}
