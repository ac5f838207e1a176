package sim_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/inputschema"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/sim"
	"github.com/apprun/apprun/simlog"
	"github.com/apprun/apprun/subjects"
)

// TestSimulation runs SEEDS seeds (200 by default; `make sim` and `make
// test` run more), or the one SEED, of the money path under faults, and
// checks every invariant after each.
func TestSimulation(t *testing.T) {
	if s := os.Getenv("SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SEED=%q: %v", s, err)
		}
		if problems := runSeed(seed, true); len(problems) > 0 {
			t.Fatalf("seed %d:\n  %s", seed, strings.Join(problems, "\n  "))
		}
		return
	}
	seeds := uint64(200)
	if s := os.Getenv("SEEDS"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n == 0 {
			t.Fatalf("SEEDS=%q: want a positive number", s)
		}
		seeds = n
	}
	first := uint64(1)
	if s := os.Getenv("SEED_FROM"); s != "" {
		first, _ = strconv.ParseUint(s, 10, 64)
	}
	var next, failed atomic.Uint64
	next.Store(first)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				seed := next.Add(1) - 1
				if seed >= first+seeds || failed.Load() >= 3 {
					return
				}
				if problems := runSeed(seed, false); len(problems) > 0 {
					failed.Add(1)
					mu.Lock()
					t.Errorf("seed %d broke %d invariants; replay it with\n    make sim SEED=%d\n  %s",
						seed, len(problems), seed, strings.Join(first5(problems), "\n  "))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("simulation: %d seeds from %d in %s", seeds, first, time.Since(start).Round(time.Millisecond))
}

func first5(p []string) []string {
	if len(p) > 5 {
		return append(p[:5:5], fmt.Sprintf("... and %d more", len(p)-5))
	}
	return p
}

const (
	price0        = 5
	ownerActive   = 2
	platformSlots = 4
	accounts      = 3
)

// node is one apprun node: a crash ends its incarnation and its engine
// (every in-memory state); the log stays.
type node struct {
	inc *sim.Incarnation
	eng *service.Service
}

// attempt is one try of a request and what it got.
type attempt struct {
	tag      string
	answered bool
	runNo    string      // on success
	code     engine.Code // on a refusal or an error
	internal bool        // a 5xx
	message  string      // the refusal's message
	// from and to: the log's newest sequence when the request was sent
	// and when it was answered (a refusal must be true of a state the
	// log held in between).
	from, to uint64
}

type request struct {
	id    int
	acct  int
	idem  string
	tries []attempt
}

// grant is one admin grant and what it got: made (answered without an
// error), or unknown (no answer: the node crashed; or an answer that says
// it may or may not have been made). Any other answer says it was not.
type grant struct {
	acct          string
	amount        int64
	made, unknown bool
}

type world struct {
	seed  uint64
	trace bool
	s     *sim.Sched
	log   *simlog.Log
	now   time.Time
	nodes []*node
	cat   *engine.Catalog
	accts []service.NewAccount
	// fault, lag and crash are this seed's rates, in 1/10,000 per step.
	fault, lag, crash int
	reqs              []*request
	grants            []*grant
	canceled          map[string]bool // acknowledged cancels
	done              map[string]bool // jobs acknowledged
	inflight          map[string]int  // jobs being executed
	attempts          map[string]uint64
	clients           int
	crashes           int
	problems          []string
}

func (w *world) problem(format string, args ...any) {
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

func (w *world) chance(per10k int) bool { return w.s.Rng.IntN(10_000) < per10k }

func (w *world) newEngine() *service.Service {
	e, err := service.New(w.log.Ports(), service.Config{Catalog: w.cat,
		Limits: engine.Limits{OwnerActiveRuns: ownerActive, PlatformActiveRuns: platformSlots},
		Reads:  noReads{}, Now: func() time.Time { return w.now }, IntN: func(n int) int { return w.s.Rng.IntN(n) },
		Sleep:   func(d time.Duration) { w.now = w.now.Add(d) },
		Go:      func(fn func()) { fn() },
		Entropy: rngReader{w.s.Rng}, Signer: simSigner,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	return e
}

// simApp does input.steps steps, then completes, or fails when input.fail.
func simApp() engine.App {
	return engine.App{Slug: "sim", Name: "sim", Price: price0, Runnable: true, Timeout: time.Hour,
		InputSchema: []byte(`{"type":"object"}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			steps, _ := job.Input["steps"].(float64)
			for i := range int(steps) {
				progress(engine.Step{Index: i + 1, Total: int(steps), Tool: "t", Message: "m"})
			}
			if fail, _ := job.Input["fail"].(bool); fail {
				return engine.Result{}, fmt.Errorf("the App failed")
			}
			return engine.Result{Summary: "done", Output: map[string]any{"ok": true}}, nil
		})}
}

func runSeed(seed uint64, trace bool) []string {
	w := &world{seed: seed, trace: trace, s: sim.NewSched(seed), log: simlog.New(),
		now:      time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
		canceled: map[string]bool{}, done: map[string]bool{}, inflight: map[string]int{}, attempts: map[string]uint64{}}
	// This seed's weather: some seeds are calm, some stormy.
	w.fault, w.lag, w.crash = w.s.Rng.IntN(600), w.s.Rng.IntN(1500), w.s.Rng.IntN(60)
	cat, err := engine.NewCatalog(inputschema.Compile, simApp())
	if err != nil {
		return []string{err.Error()}
	}
	w.cat = cat
	ctx := context.Background()
	n := 1 + w.s.Rng.IntN(3)
	for range n {
		w.nodes = append(w.nodes, &node{inc: &sim.Incarnation{}, eng: w.newEngine()})
	}
	if err := w.nodes[0].eng.Prepare(ctx); err != nil {
		return []string{"set-up: " + err.Error()}
	}
	for i := range accounts {
		a, err := w.nodes[0].eng.OpenAccount(ctx, fmt.Sprintf("sim%d@example.com", i), int64(10+w.s.Rng.IntN(40)), ledger.By{Actor: "system:sim", Reason: "sim"})
		if err != nil {
			return []string{"set-up: " + err.Error()}
		}
		w.accts = append(w.accts, a)
	}
	// From here on every log operation is a scheduling point, and may fail.
	w.log.SetHooks(simlog.Hooks{
		Step: func(ctx context.Context, op string) { w.s.Step(ctx) },
		Fault: func(ctx context.Context, op string) simlog.Fault {
			if !w.chance(w.fault) {
				return simlog.None
			}
			if op != "append" {
				return simlog.Refused
			}
			return simlog.Fault(1 + w.s.Rng.IntN(3))
		},
		Lag: func(context.Context) uint64 {
			if !w.chance(w.lag) {
				return 0
			}
			return uint64(1 + w.s.Rng.IntN(4))
		},
	})
	w.s.Between = w.between
	w.clients = 2 + w.s.Rng.IntN(4)
	for range w.clients {
		w.s.Go(w.client)
	}
	for _, nd := range w.nodes {
		w.startWorker(nd)
	}
	if !w.s.Run(400_000) {
		w.problem("livelock: no end after %d steps", w.s.Steps())
		// The actors are parked for ever; this seed's goroutines leak.
		return w.problems
	}
	w.log.SetHooks(simlog.Hooks{})
	w.check()
	return w.problems
}

// between runs before every pick: the clock moves, and a node may crash.
func (w *world) between() {
	w.now = w.now.Add(time.Duration(w.s.Rng.IntN(20)) * time.Millisecond)
	switch {
	case w.chance(5):
		w.now = w.now.Add(15 * time.Second) // past an Idempotency-Key claim's life
	case w.chance(1):
		w.now = w.now.Add(2 * time.Hour) // past the App's timeout
	}
	if w.chance(w.crash) {
		nd := w.nodes[w.s.Rng.IntN(len(w.nodes))]
		nd.inc.Kill()
		nd.inc, nd.eng = &sim.Incarnation{}, w.newEngine()
		w.crashes++
		w.startWorker(nd)
	}
}

func (w *world) pick() *node { return w.nodes[w.s.Rng.IntN(len(w.nodes))] }

// call runs fn on node nd; false when the node crashed under it (no answer).
func call(ctx context.Context, nd *node, fn func(ctx context.Context, e *service.Service)) bool {
	inc, e := nd.inc, nd.eng
	return sim.Survive(func() { fn(sim.On(ctx, inc), e) })
}

func (w *world) client(ctx context.Context) {
	defer func() { w.clients-- }()
	for range 2 + w.s.Rng.IntN(5) {
		switch r := w.s.Rng.IntN(100); {
		case r < 72:
			w.create(ctx)
		case r < 87:
			w.cancel(ctx)
		case r < 93:
			call(ctx, w.pick(), func(ctx context.Context, e *service.Service) {
				_, _, _ = e.SetPrice(ctx, "sim", int64(3+w.s.Rng.IntN(6)), false, ledger.By{Actor: "system:sim", Reason: "sim"})
			})
		case r < 95:
			call(ctx, w.pick(), func(ctx context.Context, e *service.Service) {
				_, _ = e.Checkpoint(ctx) // the ledger's checkpoint, checked with the log (check)
			})
		default:
			g := &grant{acct: w.accts[w.s.Rng.IntN(len(w.accts))].AccountID, amount: int64(1 + w.s.Rng.IntN(20))}
			w.grants = append(w.grants, g)
			var err error
			answered := call(ctx, w.pick(), func(ctx context.Context, e *service.Service) {
				_, _, err = e.GrantCredits(ctx, g.acct, g.amount, ledger.By{Actor: "system:sim", Reason: "sim"})
			})
			g.made = answered && err == nil
			g.unknown = !answered || (err != nil && strings.Contains(err.Error(), "may or may not have been made"))
		}
	}
}

// create is one logical request, retried as a careful client does: with
// its Idempotency-Key after any failure; without one, only after an
// answer that says nothing was charged (a 5xx), never after no answer.
func (w *world) create(ctx context.Context) {
	req := &request{id: len(w.reqs), acct: w.s.Rng.IntN(len(w.accts))}
	if w.s.Rng.IntN(10) < 6 {
		req.idem = fmt.Sprintf("key-%d", req.id)
	}
	w.reqs = append(w.reqs, req)
	steps, fail := w.s.Rng.IntN(4), w.s.Rng.IntN(5) == 0
	acct := w.accts[req.acct]
	for try := range 10 {
		tag := fmt.Sprintf("r%d", req.id)
		if req.idem == "" {
			tag = fmt.Sprintf("r%d.%d", req.id, try)
		}
		a := attempt{tag: tag, from: w.log.Newest()}
		var run service.CreatedRun
		var err error
		a.answered = call(ctx, w.pick(), func(ctx context.Context, e *service.Service) {
			run, err = e.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "sim",
				Input:          map[string]any{"tag": tag, "steps": float64(steps), "fail": fail},
				IdempotencyKey: req.idem})
		})
		a.to = w.log.Newest()
		if a.answered && err == nil {
			a.runNo = run.RunNo
		} else if a.answered {
			a.code, a.message = engine.ErrorCode(err), err.Error()
			a.internal = a.code == engine.CodeInternal // any error that is not a domain refusal
		}
		req.tries = append(req.tries, a)
		switch {
		case !a.answered && req.idem == "":
			return // the outcome is unknown, and a retry could pay twice
		case !a.answered, a.internal, a.code == engine.CodeIdempotencyBusy:
			continue
		default:
			return // a run, or a definite refusal
		}
	}
}

// cancel cancels an acknowledged run, any client's.
func (w *world) cancel(ctx context.Context) {
	var runs []*request
	for _, r := range w.reqs {
		if r.runNo() != "" {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return
	}
	r := runs[w.s.Rng.IntN(len(runs))]
	for range 3 {
		var err error
		var run engine.Run
		ok := call(ctx, w.pick(), func(ctx context.Context, e *service.Service) {
			run, _, err = e.CancelRun(ctx, w.accts[r.acct].AccountID, r.runNo())
		})
		if ok && err == nil && run.Canceled() {
			w.canceled[r.runNo()] = true
			return
		}
		if ok && err != nil && engine.ErrorCode(err) != engine.CodeInternal {
			return
		}
	}
}

func (r *request) runNo() string {
	for _, a := range r.tries {
		if a.runNo != "" {
			return a.runNo
		}
	}
	return ""
}

// startWorker starts an executor for a node's incarnation: it takes the
// queued jobs not yet acknowledged, as the durable consumer delivers them.
func (w *world) startWorker(nd *node) {
	inc, e := nd.inc, nd.eng
	w.s.Go(func(ctx context.Context) {
		ctx = sim.On(ctx, inc)
		for !inc.Dead() {
			jobs := w.pendingJobs()
			if len(jobs) == 0 {
				if w.clients == 0 {
					return
				}
				if !sim.Survive(func() { w.s.Step(ctx) }) {
					return
				}
				continue
			}
			runNo := jobs[w.s.Rng.IntN(len(jobs))]
			if w.inflight[runNo] > 0 && !w.chance(100) {
				// Delivered to one executor at a time, except when its ack
				// wait runs out while it still works (1 in 100 here).
				if !sim.Survive(func() { w.s.Step(ctx) }) {
					return
				}
				continue
			}
			w.attempts[runNo]++
			w.inflight[runNo]++
			var err error
			survived := sim.Survive(func() { err = e.ExecuteRun(ctx, runNo, w.attempts[runNo]) })
			w.inflight[runNo]--
			if !survived {
				return // crashed: the job is delivered again
			}
			if err == nil {
				w.done[runNo] = true // an ack; a later nak of another delivery changes nothing
			} else {
				w.now = w.now.Add(service.NakDelay(err)) // the nak's delay passes before the next delivery
			}
		}
	})
}

func (w *world) pendingJobs() []string {
	jobs, _ := w.log.Subjects(context.Background(), subjects.Of(subjects.KindJob, ">"))
	var out []string
	for _, s := range jobs {
		_, runNo := subjects.Parse(s)
		if !w.done[runNo] {
			out = append(out, runNo)
		}
	}
	return out
}

type logRun struct {
	tag      string
	terminal engine.RunEventType
	canceled bool // failed with the error code canceled
}

// simSigner signs the ledger of every seed (Ed25519 signing is
// deterministic, so a seed replays exactly); check verifies every account
// event's signature and link with its public key.
var simSigner = func() *ledger.Signer {
	s, err := ledger.NewSigner(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
	if err != nil {
		panic(err)
	}
	return s
}()

// check verifies every invariant on the log the seed left.
func (w *world) check() {
	all := w.log.All()
	audit := engine.NewAudit(simSigner.PublicKey())
	checkpoints := ledger.NewCheckpoints(simSigner.PublicKey())
	for _, m := range all {
		if m.Subject == subjects.Checkpoint {
			checkpoints.Expect(m.Seq, m.Data)
		}
	}
	runs := map[string]*logRun{}
	accounts := map[string][]acctState{} // each account's states, in log order
	var prices []priceState
	var price engine.PriceEvent
	for _, m := range all {
		audit.Apply(m.Subject, m.Seq, m.Data)
		checkpoints.Reached(m.Seq - 1)
		if m.Subject == subjects.Checkpoint {
			checkpoints.Logged(m.Seq, m.Data)
		}
		kind, id := subjects.Parse(m.Subject)
		switch kind {
		case subjects.KindPrice:
			_ = json.Unmarshal(m.Data, &price)
			prices = append(prices, priceState{m.Seq, price})
		case subjects.KindRun:
			var ev engine.RunEvent
			_ = json.Unmarshal(m.Data, &ev)
			switch {
			case ev.Type == engine.RunCreated && (price.Recalibrating || ev.Created.CreditCost != price.CreditCost):
				w.problem("event %d: run %s charged %d Credits, while the price was %+v", m.Seq, id, ev.Created.CreditCost, price)
				fallthrough
			case ev.Type == engine.RunCreated:
				var in struct {
					Tag string `json:"tag"`
				}
				_ = json.Unmarshal(ev.Created.Input, &in)
				runs[id] = &logRun{tag: in.Tag}
			case ev.Type.Terminal() && runs[id] != nil:
				runs[id].terminal = ev.Type
				runs[id].canceled = ev.Failed != nil && ev.Failed.Error != nil && ev.Failed.Error.Code == engine.FailCanceled
			}
		case subjects.KindAccount:
			var ev ledger.Event
			_ = json.Unmarshal(m.Data, &ev)
			if ev.Active > ownerActive {
				w.problem("event %d: account %s has %d active runs, above its ceiling of %d", m.Seq, id, ev.Active, ownerActive)
			}
			accounts[id] = append(accounts[id], acctState{m.Seq, ev})
			checkpoints.Event(m.Seq, m.Data, ev)
		}
	}
	for _, f := range checkpoints.End(w.log.Newest()) {
		w.problem("checkpoint: %s", f)
	}
	rep := audit.Report()
	for _, v := range rep.Violations {
		w.problem("audit: %s", v)
	}
	if rep.Active != 0 {
		w.problem("%d runs left unfinished", rep.Active)
	}
	if rep.Unsigned != 0 || (rep.Signed == 0 && len(rep.Accounts) > 0) {
		w.problem("ledger: %d account events signed, %d unsigned: every one is signed", rep.Signed, rep.Unsigned)
	}
	if rep.Granted-rep.Charged+rep.Refunded != sumBalances(rep.Accounts) {
		w.problem("credits: granted %d - charged %d + refunded %d != the balances' sum %d",
			rep.Granted, rep.Charged, rep.Refunded, sumBalances(rep.Accounts))
	}
	byTag := map[string][]string{}
	for no, r := range runs {
		byTag[r.tag] = append(byTag[r.tag], no)
		if r.terminal == "" {
			w.problem("run %s never finished (executed %d times, acknowledged %v): %s", no, w.attempts[no], w.done[no], w.history(no))
		}
	}
	w.checkRefusals(accounts, prices)
	w.checkGrants(accounts)
	known := map[string]bool{}
	for _, req := range w.reqs {
		acked := ""
		for _, a := range req.tries {
			known[a.tag] = true
			if a.runNo == "" {
				continue
			}
			if acked != "" && a.runNo != acked {
				w.problem("request %d (key %q): answered with two runs, %s and %s", req.id, req.idem, acked, a.runNo)
			}
			acked = a.runNo
			r := runs[a.runNo]
			if r == nil {
				w.problem("request %d: answered 201 with run %s, which is not in the log", req.id, a.runNo)
			} else if r.tag != a.tag {
				w.problem("request %d: answered with run %s, which another request (%s) created", req.id, a.runNo, r.tag)
			}
		}
		for _, a := range req.tries {
			got := byTag[a.tag]
			if len(got) > 1 {
				w.problem("request %d (key %q): %d runs for one request: %v", req.id, req.idem, len(got), got)
			}
			if len(got) == 1 && a.answered && a.runNo == "" && req.idem == "" {
				w.problem("request %d: answered %s (5xx %v), yet its run %s exists and was charged", req.id, a.code, a.internal, got[0])
			}
		}
	}
	for tag, nos := range byTag {
		if !known[tag] {
			w.problem("runs %v in the log belong to no request", nos)
		}
	}
	for no := range w.canceled {
		if r := runs[no]; r == nil || !r.canceled {
			w.problem("run %s: its cancel was acknowledged, yet it ended %v", no, r)
		}
	}
	if w.trace || len(w.problems) > 0 {
		w.problems = append(w.problems, fmt.Sprintf("(seed %d: %d nodes, fault %d, lag %d, crash %d per 10,000 steps; %d steps, %d crashes, %d requests, %d runs, %d fenced)",
			w.seed, len(w.nodes), w.fault, w.lag, w.crash, w.s.Steps(), w.crashes, len(w.reqs), len(runs), rep.Fenced))
		if w.trace && len(w.problems) == 1 {
			fmt.Println(w.problems[0])
			w.problems = nil
		}
	}
}

// checkGrants: each account's grants in the log are the grants answered
// as made, and no more than those and the ones whose outcome was left
// unknown (as amounts, which is all a grant event holds of its request): a
// grant answered with an error was never made, one answered made was made
// once.
func (w *world) checkGrants(accounts map[string][]acctState) {
	for _, a := range w.accts {
		logged := map[int64]int{}
		for _, st := range accounts[a.AccountID] {
			if st.ev.Type == ledger.CreditsGranted {
				logged[st.ev.Amount]++
			}
		}
		made, unknown := map[int64]int{}, map[int64]int{}
		for _, g := range w.grants {
			switch {
			case g.acct != a.AccountID:
			case g.made:
				made[g.amount]++
			case g.unknown:
				unknown[g.amount]++
			}
		}
		for amount, n := range logged {
			if n < made[amount] || n > made[amount]+unknown[amount] {
				w.problem("account %s: %d grants of %d Credits in the log, %d answered as made, %d left unknown",
					a.AccountID, n, amount, made[amount], unknown[amount])
			}
		}
		for amount, n := range made {
			if logged[amount] < n {
				w.problem("account %s: %d grants of %d Credits answered as made, %d in the log", a.AccountID, n, amount, logged[amount])
			}
		}
	}
}

// history lists a run's events.
func (w *world) history(runNo string) string {
	var out []string
	for _, m := range w.log.All() {
		if _, id := subjects.Parse(m.Subject); id == runNo {
			var ev struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(m.Data, &ev)
			out = append(out, fmt.Sprintf("%d %s %s", m.Seq, m.Subject, ev.Type))
		}
	}
	return strings.Join(out, ", ")
}

func sumBalances(m map[string]ledger.Account) int64 {
	var s int64
	for _, a := range m {
		s += a.Balance
	}
	return s
}

// rngReader makes the engine's ids from the seed.
type rngReader struct{ r *rand.Rand }

func (r rngReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.r.Uint32())
	}
	return len(p), nil
}

type noReads struct{}

func (noReads) BrandContext(context.Context, string) (engine.BrandContext, error) {
	return engine.BrandContext{}, port.ErrNotFound
}

func (noReads) FinishedBefore(time.Time, int) ([]engine.FinishedRun, error) { return nil, nil }

type acctState struct {
	seq uint64
	ev  ledger.Event
}

type priceState struct {
	seq uint64
	ev  engine.PriceEvent
}

// during is the states of a history (in log order) that held at some
// moment between sequences from and to: the last at or before from, and
// every one after it up to to.
func during[S any](states []S, seq func(S) uint64, from, to uint64) []S {
	first := 0
	for i, s := range states {
		if seq(s) <= from {
			first = i
		}
	}
	var out []S
	for i := first; i < len(states) && seq(states[i]) <= to; i++ {
		out = append(out, states[i])
	}
	return out
}

// checkRefusals: every refusal of a create must be true of a state the log
// held while the request was in flight (admissions decide from a cache,
// and must refuse only from the log: service/store's lastCache). A 402 names a
// balance the account had then, short of a price the App had then; a
// concurrency_limit of the account's ceiling comes when it was full.
func (w *world) checkRefusals(accounts map[string][]acctState, prices []priceState) {
	for _, req := range w.reqs {
		acct := w.accts[req.acct].AccountID
		for _, a := range req.tries {
			if !a.answered {
				continue
			}
			states := during(accounts[acct], func(s acctState) uint64 { return s.seq }, a.from, a.to)
			switch {
			case a.code == engine.CodeInsufficientCredits:
				var balance, cost int64
				if _, err := fmt.Sscanf(a.message, "insufficient_credits: balance is %d Credits, the run costs %d", &balance, &cost); err != nil {
					w.problem("request %d: 402 %q: %v", req.id, a.message, err)
					continue
				}
				held := false
				for _, s := range states {
					held = held || s.ev.Balance == balance
				}
				priced := false
				for _, p := range during(prices, func(s priceState) uint64 { return s.seq }, a.from, a.to) {
					priced = priced || (!p.ev.Recalibrating && p.ev.CreditCost == cost)
				}
				if !held || !priced || balance >= cost {
					w.problem("request %d: answered 402 %q, untrue of the log between %d and %d (balances %v)", req.id, a.message, a.from, a.to, states)
				}
			case a.code == engine.CodeConcurrencyLimit && strings.Contains(a.message, "this account"):
				full := false
				for _, s := range states {
					full = full || s.ev.Active >= ownerActive
				}
				if !full {
					w.problem("request %d: answered %q, yet the account was never full between %d and %d (%v)", req.id, a.message, a.from, a.to, states)
				}
			}
		}
	}
}
