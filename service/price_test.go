package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"

	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/inputschema"
	"github.com/apprun/apprun/internal/logbuf"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/subjects"
)

// jobChecks are the subjects the job entries of the recorded appends
// check: each admission's price check.
func (l *recordingLog) jobChecks() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, a := range l.appends {
		for _, e := range a {
			if kind, _ := subjects.Parse(e.Subject); kind == subjects.KindJob {
				out = append(out, e.ExpectSubject)
			}
		}
	}
	return out
}

// sharedLog is one embedded JetStream log that several services can run on.
type sharedLog struct {
	t     *testing.T
	ports port.Set
	// logs, when set, collects the services' logs.
	logs *logbuf.Buffer
}

func newSharedLog(t *testing.T) *sharedLog {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := eventlog.Open(ctx, natstest.Connect(t, false), eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &sharedLog{t: t, ports: st.Ports()}
}

// engine is a new service on the log, not started, whose random choices
// are all copyIndex (so it checks that copy of every price); its Log port is
// recorded. Its catalog is apps, or okApp alone.
func (s *sharedLog) engine(copyIndex int, apps ...engine.App) (*service.Service, *recordingLog) {
	s.t.Helper()
	if len(apps) == 0 {
		apps = []engine.App{okApp()}
	}
	cat, err := engine.NewCatalog(inputschema.Compile, apps...)
	if err != nil {
		s.t.Fatal(err)
	}
	rec := &recordingLog{Log: s.ports.Log}
	ports := s.ports
	ports.Log = rec
	e, err := engineOn(ports, cat, engine.Limits{}, func(c *service.Config) {
		c.IntN = func(n int) int { return copyIndex % n }
		if s.logs != nil {
			c.Logger = slog.New(slog.NewTextHandler(s.logs, nil))
		}
	})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(e.Stop)
	return e, rec
}

// prepared is engine(copyIndex) with the catalog's prices written, and an
// account of 100 Credits opened on it.
func (s *sharedLog) prepared(copyIndex int) (*service.Service, *recordingLog, string) {
	s.t.Helper()
	e, rec := s.engine(copyIndex)
	ctx := context.Background()
	if err := e.Prepare(ctx); err != nil {
		s.t.Fatal(err)
	}
	acct, err := e.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		s.t.Fatal(err)
	}
	return e, rec, acct.AccountID
}

// lastData is the newest message's data on subject.
func (s *sharedLog) lastData(subject string) []byte {
	s.t.Helper()
	m, err := s.ports.Log.Last(context.Background(), subject)
	if err != nil {
		s.t.Fatalf("%s: %v", subject, err)
	}
	return m.Data
}

// copiesOf fails unless every copy of slug's price holds the price's own
// event.
func (s *sharedLog) copiesOf(slug string) {
	s.t.Helper()
	want := s.lastData(service.PriceSubject(slug))
	for i := range service.PriceCopies {
		if got := s.lastData(service.PriceCopySubject(slug, i)); !bytes.Equal(got, want) {
			s.t.Fatalf("copy %d of the price of %s is %s, the price %s", i, slug, got, want)
		}
	}
}

func createOk(t *testing.T, e *service.Service, accountID string) service.CreatedRun {
	t.Helper()
	run, err := e.CreateRun(context.Background(), service.CreateRunRequest{AccountID: accountID, KeyID: "key_test", AppSlug: "ok",
		Input: map[string]any{"topic": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// A price and its copies are one atomic write, the first price as much as
// a change: no admission can see a copy that is not the price. A copy
// keeps its newest message only.
func TestAPriceIsWrittenWithItsCopies(t *testing.T) {
	t.Parallel()
	log := newSharedLog(t)
	e, rec := log.engine(0)
	ctx := context.Background()
	if err := e.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	log.copiesOf("ok")
	if _, _, err := e.SetPrice(ctx, "ok", 7, false, ledger.By{Actor: "system:test", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	log.copiesOf("ok")
	for i := range service.PriceCopies { // each copy is its newest message only: a price change adds none to keep
		n := 0
		if err := log.ports.Log.Read(ctx, service.PriceCopySubject("ok", i), 0, func(port.Message) error { n++; return nil }); err != nil || n != 1 {
			t.Fatalf("copy %d holds %d messages (%v), want its newest only", i, n, err)
		}
	}
	last := rec.appends[len(rec.appends)-1]
	if len(last) != 1+service.PriceCopies || last[0].Subject != service.PriceSubject("ok") {
		t.Fatalf("a price change was written as %d entries starting on %s; want the price and its %d copies in one write",
			len(last), last[0].Subject, service.PriceCopies)
	}
}

// Each service's admissions check its own copy of the price, so that the
// nodes of a cluster do not wait on one subject (on a replicated stream
// JetStream refuses a check on a subject while another checked write on it
// is being replicated); a price changed through any service is still the
// price every admission charges or is refused.
func TestEachEngineChecksItsOwnCopyOfThePrice(t *testing.T) {
	t.Parallel()
	log := newSharedLog(t)
	a, recA := log.engine(3)
	b, recB := log.engine(11)
	ctx := context.Background()
	for _, e := range []*service.Service{a, b} {
		if err := e.Prepare(ctx); err != nil {
			t.Fatal(err)
		}
	}
	acct, err := a.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	createOk(t, a, acct.AccountID)
	createOk(t, b, acct.AccountID)
	for _, c := range []struct {
		rec  *recordingLog
		want string
	}{{recA, service.PriceCopySubject("ok", 3)}, {recB, service.PriceCopySubject("ok", 11)}} {
		if got := c.rec.jobChecks(); len(got) != 1 || got[0] != c.want {
			t.Fatalf("the admission checked %q, want %q", got, c.want)
		}
	}

	read, err := b.AdmissionPrice(ctx, "ok")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.SetPrice(ctx, "ok", 7, false, ledger.By{Actor: "system:test", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AdmitAtRead(ctx, acct.AccountID, "ok", read); engine.ErrorCode(err) != engine.CodePricingNotReady {
		t.Fatalf("an admission at the price its copy held before a change: %v, want pricing_not_ready", err)
	}
	if run := createOk(t, b, acct.AccountID); run.CreditCost != 7 {
		t.Fatalf("charged %d after the price changed to 7 on another engine", run.CreditCost)
	}
}

// legacyPrice writes an App's price as apprun did before copies: the
// price's own message only.
func legacyPrice(t *testing.T, l port.Log, slug string, cost int64) {
	t.Helper()
	data, err := json.Marshal(engine.PriceEvent{Type: "price_set", V: 1, At: time.Now().UTC(), Slug: slug, CreditCost: cost})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), port.Entry{Subject: service.PriceSubject(slug), Data: data}); err != nil {
		t.Fatal(err)
	}
}

// A log written before copies: its admissions check the price itself
// until a node starts and copies it.
func TestALogFromBeforeCopiesIsCopiedAtStart(t *testing.T) {
	t.Parallel()
	log := newSharedLog(t)
	legacyPrice(t, log.ports.Log, "ok", 4)
	e, rec := log.engine(5)
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if run := createOk(t, e, acct.AccountID); run.CreditCost != 4 {
		t.Fatalf("charged %d, the price is 4", run.CreditCost)
	}
	if err := e.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	log.copiesOf("ok")
	if run := createOk(t, e, acct.AccountID); run.CreditCost != 4 {
		t.Fatalf("charged %d, the price is 4", run.CreditCost)
	}
	if got := rec.jobChecks(); len(got) != 2 || got[0] != service.PriceSubject("ok") || got[1] != service.PriceCopySubject("ok", 5) {
		t.Fatalf("admissions checked %q, want the price itself, then the copy", got)
	}
}

// Copies are only ever of the price: a price that changes while a node
// copies it (a node of an older version changing it) leaves no copy, and
// admissions check the price itself.
func TestCopiesOfAChangedPriceAreNeverWritten(t *testing.T) {
	t.Parallel()
	log := newSharedLog(t)
	legacyPrice(t, log.ports.Log, "ok", 4)
	e, rec := log.engine(2)
	rec.before = func(entries []port.Entry) bool { return entries[0].Subject == service.PriceCopySubject("ok", 0) }
	rec.inject = func() { legacyPrice(t, log.ports.Log, "ok", 9) }
	ctx := context.Background()
	if err := e.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := log.ports.Log.Last(ctx, service.PriceCopySubject("ok", 2)); err != port.ErrNoMessage {
		t.Fatalf("a copy of a price that changed meanwhile was written: %v", err)
	}
	acct, err := e.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if run := createOk(t, e, acct.AccountID); run.CreditCost != 9 {
		t.Fatalf("charged %d, the price is 9", run.CreditCost)
	}
}

// A price written without its copies (by a node from before them) is newer
// than the copies, and admissions that read it check the price itself.
func TestAPriceWrittenWithoutCopiesIsThePrice(t *testing.T) {
	t.Parallel()
	log := newSharedLog(t)
	e, _, acct := log.prepared(6)
	ctx := context.Background()
	legacyPrice(t, log.ports.Log, "ok", 9)
	p, err := e.AdmissionPrice(ctx, "ok")
	if err != nil {
		t.Fatal(err)
	}
	if p.CreditCost != 9 {
		t.Fatalf("an admission read %d, the price is 9", p.CreditCost)
	}
	runNo, err := e.AdmitAtRead(ctx, acct, "ok", p)
	if err != nil {
		t.Fatal(err)
	}
	if after, _, _ := e.Account(ctx, acct); after.Balance != 91 {
		t.Fatalf("run %s left a balance of %d, want 100 - 9", runNo, after.Balance)
	}
}

// An admission that read the price on another subject than it reads it on
// when it tries again (here the price itself, then the copy) keeps its
// price when the terms are the same: a retry is no price change.
func TestARetriedAdmissionKeepsAPriceReadOnAnotherSubject(t *testing.T) {
	t.Parallel()
	log := newSharedLog(t)
	e, rec, acct := log.prepared(4)
	ctx := context.Background()
	read, err := e.CurrentPrice(ctx, "ok") // the price's own subject
	if err != nil {
		t.Fatal(err)
	}
	// A grant lands between the admission's read of the account and its
	// write: the write fails its check and the admission tries again.
	rec.before = func(entries []port.Entry) bool {
		kind, _ := subjects.Parse(entries[0].Subject)
		return kind == subjects.KindAccount && len(entries) > 1
	}
	rec.inject = func() {
		if _, _, err := e.GrantCredits(ctx, acct, 10, ledger.By{Actor: "system:test", Reason: "test"}); err != nil {
			t.Error(err)
		}
	}
	if _, err := e.AdmitAtPrice(ctx, acct, "ok", read); err != nil {
		t.Fatalf("a retried admission at the unchanged price: %v", err)
	}
	if checks := rec.jobChecks(); len(checks) != 2 || checks[1] != service.PriceCopySubject("ok", 4) {
		t.Fatalf("the admission's checks: %q, want the price, then the copy on the retry", checks)
	}
}

// A fresh log gets every App's price and its copies; a node that starts
// on a log that has them only reads.
func TestEveryAppIsPricedAndCopiedOnceAtStart(t *testing.T) {
	t.Parallel()
	log := newSharedLog(t)
	var apps []engine.App
	for i := range 12 {
		a := okApp()
		a.Slug, a.Price = fmt.Sprintf("app-%d", i), int64(1+i)
		apps = append(apps, a)
	}
	first, _ := log.engine(1, apps...)
	second, rec := log.engine(2, apps...)
	ctx := context.Background()
	if err := first.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	for i, a := range apps {
		log.copiesOf(a.Slug)
		if p, err := first.CurrentPrice(ctx, a.Slug); err != nil || p.CreditCost != int64(1+i) {
			t.Fatalf("%s: %+v %v, want its price %d", a.Slug, p, err, 1+i)
		}
	}
	if err := second.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if len(rec.appends) != 0 {
		t.Fatalf("a node starting on a priced log wrote %d times", len(rec.appends))
	}
}

// Nodes that start together on a fresh log race to price each App: each
// is priced and copied once, and losing that race is no wait to log.
func TestNodesStartingTogetherPriceEachAppOnce(t *testing.T) {
	t.Parallel()
	log := newSharedLog(t)
	log.logs = &logbuf.Buffer{}
	var apps []engine.App
	for i := range 12 {
		a := okApp()
		a.Slug = fmt.Sprintf("app-%d", i)
		apps = append(apps, a)
	}
	var engines []*service.Service
	for i := range 3 {
		e, _ := log.engine(i, apps...)
		engines = append(engines, e)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, e := range engines {
		wg.Go(func() {
			if err := e.Prepare(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, a := range apps {
		n := 0
		if err := log.ports.Log.Read(ctx, service.PriceSubject(a.Slug), 0, func(port.Message) error { n++; return nil }); err != nil || n != 1 {
			t.Fatalf("%s was priced %d times (%v), want once", a.Slug, n, err)
		}
		log.copiesOf(a.Slug)
	}
	// (A write slower than Retry's first attempt, on a busy machine, is
	// still logged as a wait: it is one.)
	if got := log.logs.String(); strings.Contains(got, "priced this App") {
		t.Fatalf("losing the race to price an App was logged as a wait:\n%s", got)
	}
}

// Two nodes that picked the same copy refused each other's admissions
// while either's batch was replicated, and a cluster's creates fell by
// 40 % (BENCHMARKS.md, ninth pass). An admission refused while neither
// its account nor its price moved moves its service to another copy; one
// refused by a change it can see keeps it
// (TestARetriedAdmissionKeepsAPriceReadOnAnotherSubject).
func TestARefusalTheLogDoesNotExplainMovesToAnotherCopy(t *testing.T) {
	t.Parallel()
	log := newSharedLog(t)
	e, rec, acct := log.prepared(4)
	ctx := context.Background()
	read, err := e.AdmissionPrice(ctx, "ok")
	if err != nil {
		t.Fatal(err)
	}
	refused := false
	rec.refuse = func(entries []port.Entry) error {
		if kind, _ := subjects.Parse(entries[0].Subject); kind == subjects.KindAccount && len(entries) > 1 && !refused {
			refused = true
			return port.ErrConflict // another node's check on the copy, being replicated
		}
		return nil
	}
	if _, err := e.AdmitAtRead(ctx, acct, "ok", read); err != nil {
		t.Fatalf("an admission refused once: %v", err)
	}
	next, err := e.AdmissionPrice(ctx, "ok")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.AdmitAtRead(ctx, acct, "ok", next); err != nil {
		t.Fatal(err)
	}
	// The test's IntN answers 4 % n: the copy after 4 is 5.
	want := []string{service.PriceCopySubject("ok", 4), service.PriceCopySubject("ok", 5), service.PriceCopySubject("ok", 5)}
	if got := rec.jobChecks(); !slices.Equal(got, want) {
		t.Fatalf("the admissions' checks: %q, want %q", got, want)
	}
	if after, _, _ := e.Account(ctx, acct); after.Balance != 100-2*read.CreditCost {
		t.Fatalf("balance %d after two runs at %d", after.Balance, read.CreditCost)
	}
}
