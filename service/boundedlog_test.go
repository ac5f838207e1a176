package service_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
)

// recordingLog keeps every entry appended, as the service asked for it:
// entries those stored, appends every append tried (stored or not). It
// can run a write of its own (inject) just before the first append that
// before matches.
type recordingLog struct {
	port.Log
	mu      sync.Mutex
	entries []port.Entry
	appends [][]port.Entry
	before  func([]port.Entry) bool
	inject  func()
	// refuse, when set, may refuse an append with an error of its own,
	// nothing written (as JetStream refuses a batch whose check fails).
	refuse func([]port.Entry) error
}

func (l *recordingLog) Append(ctx context.Context, entries ...port.Entry) (uint64, error) {
	l.mu.Lock()
	l.appends = append(l.appends, entries)
	inject := l.before != nil && l.before(entries)
	if inject {
		l.before = nil
	}
	l.mu.Unlock()
	if inject {
		l.inject()
	}
	if l.refuse != nil {
		if err := l.refuse(entries); err != nil {
			return 0, err
		}
	}
	seq, err := l.Log.Append(ctx, entries...)
	if err == nil {
		l.mu.Lock()
		l.entries = append(l.entries, entries...)
		l.mu.Unlock()
	}
	return seq, err
}

// count is how many entries were appended on subjects with prefix.
func (l *recordingLog) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.entries {
		if strings.HasPrefix(e.Subject, prefix) {
			n++
		}
	}
	return n
}

// The billing history: what the log keeps for good (account events) or
// for the App's retention (the run's events, then its expiry marker).
func billing(subject string) bool {
	for _, p := range []string{"apprun.acct.", "apprun.run.", "apprun.expired."} {
		if strings.HasPrefix(subject, p) {
			return true
		}
	}
	return false
}

// The bounded log (docs/log.md): N runs, each with an Idempotency-Key and
// a webhook, and a key used across many minutes, leave outside the
// billing history at most what the docs say, and every record that is
// no part of it either expires or keeps only its newest message.
func TestNRunsLeaveABoundedLogOutsideTheBillingHistory(t *testing.T) {
	t.Parallel()
	var posts atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts.Add(1) }))
	t.Cleanup(hook.Close)
	var offset atomic.Int64 // the clock moves on by minutes between runs
	rec := &recordingLog{}
	e := startEngineConfig(t, false, engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 3},
		func(l port.Log) port.Log { rec.Log = l; return rec },
		func(c *service.Config) {
			c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			c.Webhooks.AllowPrivate = true
		}, okApp())
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 1000, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	subjectsBefore := countOutsideBilling(t, rec.Log)
	const runs = 20
	for i := range runs {
		if err := e.TouchKey(ctx, acct.KeyID); err != nil {
			t.Fatal(err)
		}
		run, err := e.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "ok",
			Input: map[string]any{}, WebhookURL: hook.URL, IdempotencyKey: fmt.Sprintf("k%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		finished(t, e, run.RunNo)
		offset.Add(int64(2 * service.KeyUseEvery))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ds, err := e.Deliveries(ctx, acct.AccountID, 100)
		if err != nil {
			t.Fatal(err)
		}
		delivered := 0
		for _, d := range ds {
			if d.Status == "delivered" {
				delivered++
			}
		}
		if delivered == runs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d webhooks delivered", delivered, runs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := e.CompactSlots(ctx); err != nil {
		t.Fatal(err)
	}

	// What stays, by family, against the documented bound.
	after := countOutsideBilling(t, rec.Log)
	for family, n := range after {
		n -= subjectsBefore[family]
		if n == 0 {
			continue
		}
		bound, ok := map[string]int{
			"apprun.job.":    runs,     // one work item a run, removed with the run at retention
			"apprun.slot.":   3,        // one message a platform slot used
			"apprun.keyuse.": 1,        // one message a key
			"apprun.idem.":   2 * runs, // claimed + completed, each expiring after 25 h
			"apprun.hook.":   runs,     // one job a target, expiring after the delivery window + 1 h
			"apprun.whdel.":  runs,     // one record a target, expiring after 30 days
			"apprun.whsec.":  1,        // the account's signing secret
		}[family]
		if !ok {
			t.Errorf("%d messages on %s*: not in the documented list", n, family)
			continue
		}
		if n > bound {
			t.Errorf("%d messages on %s*, documented bound %d for %d runs", n, family, bound, runs)
		}
	}

	// Every record outside the billing history that grows with use
	// expires or rolls up.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, en := range rec.entries {
		switch {
		case strings.HasPrefix(en.Subject, "apprun.idem."), strings.HasPrefix(en.Subject, "apprun.hook."):
			if en.TTL <= 0 {
				t.Errorf("%s was written without a TTL", en.Subject)
			}
		case strings.HasPrefix(en.Subject, "apprun.whdel."):
			if en.TTL <= 0 || !en.Rollup {
				t.Errorf("%s was written with TTL %s, rollup %v; want both", en.Subject, en.TTL, en.Rollup)
			}
		case strings.HasPrefix(en.Subject, "apprun.keyuse."):
			if !en.Rollup {
				t.Errorf("%s was written without a rollup", en.Subject)
			}
		case billing(en.Subject):
			if en.TTL != 0 || en.Rollup {
				t.Errorf("billing record %s was written to expire or roll up", en.Subject)
			}
		}
	}
	if n := posts.Load(); n < runs {
		t.Fatalf("%d webhook posts for %d runs", n, runs)
	}
}

// countOutsideBilling counts the log's messages outside the billing
// history by subject family ("apprun.job." …).
func countOutsideBilling(t *testing.T, log port.Log) map[string]int {
	t.Helper()
	ctx := context.Background()
	subjects, err := log.Subjects(ctx, "apprun.>")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, s := range subjects {
		if billing(s) {
			continue
		}
		family := s[:strings.Index(s[len("apprun."):], ".")+len("apprun.")+1]
		if err := log.Read(ctx, s, 0, func(port.Message) error { out[family]++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
