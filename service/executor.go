package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/service/worker"
	"github.com/apprun/apprun/subjects"
)

// ackWait is how long a job may go without a heartbeat before JetStream
// hands it to another executor: after a crash, how soon a run continues.
const ackWait = 10 * time.Second

// errStaleRead: a read came from a replica behind the write it must see.
var errStaleRead = errors.New("service: read from a replica that is behind; retrying")

// errRunMoved: another executor wrote the run while this one ran it.
var errRunMoved = errors.New("service: another executor wrote this run meanwhile; retrying")

// errRunHeld: the run is running and its executor is alive (it wrote to
// the run's log while this delivery watched); the job was delivered again
// anyway (the work queue's leader changed and lost its heartbeats).
// Executing it again would pay its App twice, and failing it after
// maxAttempts such deliveries would end a healthy run: look again after
// ackWait.
var errRunHeld = errors.New("service: the run's executor is alive elsewhere; looking again later")

// maxAttempts bounds how often a run is executed: a run interrupted this
// many times (crashes, stops) fails with code interrupted and is refunded.
const maxAttempts = 5

// executor consumes run jobs from the shared durable consumer (every node
// consumes the same one, so a run executes on one node at a time), on a
// worker pool of cfg.Workers, and drives each run to exactly one terminal
// event.
type executor struct {
	svc  *Service
	pool *worker.Pool
}

func newExecutor(e *Service) *executor { return &executor{svc: e} }

func (x *executor) start(ctx context.Context) error {
	pool, err := worker.Start(ctx, x.svc.ports.Queue, worker.Config{
		Spec: port.QueueSpec{Name: subjects.ExecutorConsumer, Filter: subjects.JobPrefix + "*",
			AckWait: ackWait, MaxPending: 1024, Batch: x.svc.cfg.Workers},
		Slots: x.svc.cfg.Workers, Heartbeat: ackWait / 3}, x.handle)
	if err != nil {
		return err
	}
	x.pool = pool
	return nil
}

func (x *executor) stop() { x.pool.Stop() }

// busy is how many workers hold a run now (0 before start).
func (x *executor) busy() int {
	if x == nil {
		return 0
	}
	return x.pool.Busy()
}

// handle does one delivery of a run's job.
func (x *executor) handle(ctx context.Context, msg port.QueueMsg) worker.Outcome {
	runNo := strings.TrimPrefix(msg.Subject(), subjects.JobPrefix)
	err := x.svc.ExecuteRun(ctx, runNo, msg.Attempt())
	if err == nil {
		return worker.Done()
	}
	expected := errors.Is(err, errStaleRead) || errors.Is(err, errRunMoved) || errors.Is(err, errRunHeld)
	if !expected && ctx.Err() == nil {
		x.svc.cfg.Logger.Error("run execution interrupted; will be redelivered", "run_no", runNo, "err", err)
	}
	return worker.Retry(NakDelay(err))
}

// watchHeld and watchEvery: a delivery of a running run watches its log
// this long, in these steps, for an event its executor writes.
const (
	watchHeld  = 2 * time.Second
	watchEvery = 250 * time.Millisecond
)

// heldElsewhere says whether a running run delivered again has an
// executor that is alive: it writes to the run's log within watchHeld.
// After a crash or a restart nothing does, and this delivery takes the run
// over 2 s later; after the work queue's leader changed, the live executor
// goes on writing and keeps the run. (An executor silent for 2 s, in a long
// model call, is taken for dead, as an expired ack wait always did.)
func (x *executor) heldElsewhere(ctx context.Context, runNo string, last uint64) (bool, error) {
	for waited := time.Duration(0); waited < watchHeld; waited += watchEvery {
		x.svc.cfg.Sleep(watchEvery)
		if ctx.Err() != nil {
			return false, ctx.Err() // this node is stopping: leave the run to the next delivery
		}
		m, err := x.svc.ports.Log.Last(ctx, subjects.Run(runNo))
		if err != nil {
			return false, err
		}
		if m.Seq != last {
			return true, nil
		}
	}
	return false, nil
}

// NakDelay is how long a run's job waits before it is delivered again
// after ExecuteRun returned err: shortly after a stale read or another
// executor's write, an ack wait when the run's executor is alive
// elsewhere, a second otherwise.
func NakDelay(err error) time.Duration {
	switch {
	case errors.Is(err, errStaleRead), errors.Is(err, errRunMoved):
		return 100 * time.Millisecond
	case errors.Is(err, errRunHeld):
		return ackWait
	}
	return time.Second
}

// runWriter appends to one run's log with compare-and-set, so only the
// executor that holds the run can write it.
type runWriter struct {
	svc  *Service
	run  engine.Run
	last uint64
}

func (w *runWriter) write(ctx context.Context, ev engine.RunEvent) error {
	ev.RunNo = w.run.RunNo
	if ev.At.IsZero() {
		ev.At = w.svc.now()
	}
	seq, err := w.svc.log.Append(ctx, runEventWrite(w.last, ev))
	if err != nil {
		return err
	}
	w.last = seq
	w.run = engine.ApplyRun(w.run, ev, seq)
	return nil
}

// ExecuteRun drives one run from its log to a terminal event: what the
// executor does with each delivery of a run's job (attempt counts them).
// A run found already terminal is left alone; an error means "try again
// later" (the job is delivered again).
func (s *Service) ExecuteRun(ctx context.Context, runNo string, attempt uint64) error {
	return (&executor{svc: s}).execute(ctx, runNo, attempt)
}

func (x *executor) execute(ctx context.Context, runNo string, attempt uint64) error {
	events, err := x.svc.log.RunLog(ctx, runNo, 0)
	if err != nil {
		return err
	}
	if len(events) == 0 || events[0].Event.Type != engine.RunCreated {
		// The job and the run were written in one batch, so the run exists:
		// in a cluster a direct get may come from a replica that has not
		// applied it yet. Try again shortly; give up only on a broken log.
		if attempt > 10*maxAttempts {
			x.svc.cfg.Logger.Error("job for a run with no created event; dropped", "run_no", runNo)
			return nil
		}
		return errStaleRead
	}
	created := events[0].Event
	w := &runWriter{svc: x.svc}
	for _, le := range events {
		w.run = engine.ApplyRun(w.run, le.Event, le.Seq)
		w.last = le.Seq
	}
	if w.run.Terminal() {
		return nil
	}
	if attempt > 1 && w.run.Status == engine.StatusRunning {
		held, err := x.heldElsewhere(ctx, runNo, w.last)
		if err != nil {
			return err
		}
		if held {
			return errRunHeld
		}
	}
	if attempt > maxAttempts {
		return x.finish(ctx, w, nil, &engine.RunError{Code: engine.FailInterrupted,
			Message: fmt.Sprintf("the run was interrupted %d times and was not retried again", attempt-1)})
	}
	app, err := x.svc.cfg.Catalog.Lookup(created.Created.AppSlug)
	if err != nil {
		return x.finish(ctx, w, nil, &engine.RunError{Code: engine.FailExecution, Message: "the App is no longer runnable"})
	}
	job, err := x.jobFor(ctx, app, created, events[0].Seq)
	if errors.Is(err, port.ErrUnavailable) || store.IsAmbiguous(err) {
		return err // the log is away: try again, do not fail a good run
	}
	if err != nil {
		return x.finish(ctx, w, nil, &engine.RunError{Code: engine.FailExecution, Message: err.Error()})
	}
	if w.run.Status == engine.StatusQueued {
		if err := w.write(ctx, engine.RunEvent{Type: engine.RunStarted}); err != nil {
			if errors.Is(err, port.ErrConflict) {
				// Canceled between the read of its log and now: done, and
				// logged as a cancel, not as an interrupted execution.
				if ended, rerr := x.endedElsewhere(ctx, w); rerr == nil && ended {
					return nil
				}
			}
			return err
		}
	}
	// The timeout runs from the first start: a run redelivered after a
	// crash gets only what is left of it.
	deadline := w.run.StartedAt.Add(app.Timeout)
	if !x.svc.now().Before(deadline) {
		return x.finish(ctx, w, nil, failure(context.DeadlineExceeded, app.Timeout))
	}
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// A cancel writes the run's terminal event: stop the work at once
	// (the finish that follows finds the run ended and leaves it).
	defer x.svc.onEnd(runNo, cancel)()
	var stopped error // errRunEnded or errRunMoved: the work stops
	write := func(ev engine.RunEvent, what string) {
		if stopped != nil {
			return
		}
		switch err := w.writeProgress(runCtx, ev); {
		case errors.Is(err, errRunEnded), errors.Is(err, errRunMoved):
			stopped = err
			cancel()
		case err != nil && runCtx.Err() == nil:
			x.svc.cfg.Logger.Warn(what+" not written; the run goes on", "run_no", runNo, "err", err)
		}
	}
	if !x.svc.cfg.NoRecord {
		job.Record = func(e engine.RecordEntry) {
			write(engine.RunEvent{Type: engine.RunRecorded, Recorded: &engine.Recorded{Entry: &e}}, "record entry")
		}
	}
	res, runErr := app.Executor(runCtx, job, func(s engine.Step) {
		write(engine.RunEvent{Type: engine.ToolRunning, ToolRun: &engine.ToolRun{Step: &s}}, "progress event")
	})
	switch {
	case errors.Is(stopped, errRunEnded):
		x.logCanceled(w.run) // met by a step's write: the cancel wrote the run's end
		return nil
	case stopped != nil:
		return stopped // another executor has it
	}
	if ctx.Err() != nil {
		return ctx.Err() // this node is stopping: another will take the run
	}
	if runErr == nil && runCtx.Err() != nil {
		runErr = runCtx.Err()
	}
	if runErr != nil {
		return x.finish(ctx, w, nil, failure(runErr, app.Timeout))
	}
	return x.finish(ctx, w, &res, nil)
}

func (x *executor) jobFor(ctx context.Context, app *engine.App, created engine.RunEvent, createdSeq uint64) (engine.Job, error) {
	job := engine.Job{RunNo: created.RunNo, AppSlug: app.Slug, Model: created.Created.Model}
	if err := json.Unmarshal(created.Created.Input, &job.Input); err != nil {
		return engine.Job{}, fmt.Errorf("stored input unreadable: %w", err)
	}
	if created.Created.BrandContextID != "" {
		bc, err := x.svc.brandContextAt(ctx, created.Created.BrandContextID, createdSeq)
		if err != nil {
			return engine.Job{}, fmt.Errorf("brand context %s unreadable: %w", created.Created.BrandContextID, err)
		}
		job.BrandContext = &bc
	}
	return job, nil
}

func failure(err error, timeout time.Duration) *engine.RunError {
	var e *engine.Error
	var re *engine.RunError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &engine.RunError{Code: engine.FailTimeout, Message: fmt.Sprintf("the run exceeded the App's timeout of %s", timeout)}
	case errors.As(err, &re):
		return re
	case errors.As(err, &e):
		return &engine.RunError{Code: string(e.Code), Message: e.Message}
	default:
		return &engine.RunError{Code: engine.FailExecution, Message: err.Error()}
	}
}

// endedElsewhere reports whether the run has ended since this executor
// last wrote to it, and logs a cancel once, at INFO: a cancel is not an
// error.
func (x *executor) endedElsewhere(ctx context.Context, w *runWriter) (bool, error) {
	events, err := x.svc.log.RunLog(ctx, w.run.RunNo, w.last)
	if err != nil {
		return false, err
	}
	return x.endedIn(w, events), nil
}

// endedIn is endedElsewhere for the run's events after the executor's
// last write, already read.
func (x *executor) endedIn(w *runWriter, events []store.LoggedEvent) bool {
	if len(events) == 0 || !events[len(events)-1].Event.Type.Terminal() {
		return false
	}
	end := events[len(events)-1]
	x.logCanceled(engine.ApplyRun(w.run, end.Event, end.Seq))
	return true
}

// logCanceled logs, once a run's execution stops on finding the run
// ended, that its owner canceled it, when that is what ended it: at
// INFO, since a cancel is not an error. An execution stops at the first
// write or read that finds the run ended (its started event, a step, or
// the finish), so a cancel is logged once.
func (x *executor) logCanceled(run engine.Run) {
	if run.Canceled() {
		x.svc.cfg.Logger.Info("run canceled by its owner; its execution stopped", "run_no", run.RunNo)
	}
}

// finish writes the run's one terminal event together with the account's
// settle or refund and the release of its platform slot: one atomic write,
// compare-and-set on the run (a second terminal event is impossible) and on
// the account (the carried balance stays exact).
//
// The account comes from the cache (the store's lastCache), as an admission's does:
// the write's compare-and-set on it makes a stale copy a refused write and
// a read of the log, and a copy that does not hold the run (another node's
// admission this node has not seen yet) is read again from the log before
// anything is concluded from it.
func (x *executor) finish(ctx context.Context, w *runWriter, res *engine.Result, fail *engine.RunError) error {
	var out json.RawMessage
	if fail == nil {
		var err error
		if out, err = json.Marshal(res.Output); err != nil {
			fail = &engine.RunError{Code: engine.FailExecution, Message: "the App's output could not be encoded"}
		}
	}
	fromCache := true
	for range x.svc.casTries() {
		acct, acctSeq, err := x.svc.log.Account(ctx, w.run.AccountID, fromCache)
		if err != nil && fromCache {
			fromCache = false
			continue
		}
		if err != nil {
			return err
		}
		at := x.svc.now()
		term := engine.RunEvent{Type: engine.RunCompleted, V: engine.EventVersion, RunNo: w.run.RunNo, At: at}
		var acctEv ledger.Event
		if fail == nil {
			term.Completed = &engine.Completed{Summary: res.Summary, Output: out}
			acctEv, err = ledger.Settle(acct, w.run.RunNo, w.run.AppSlug, at)
		} else {
			term.Type, term.Failed = engine.RunFailed, &engine.Failed{Error: fail, Refunded: w.run.CreditCost}
			acctEv, err = ledger.Refund(acct, w.run.RunNo, w.run.AppSlug, w.run.CreditCost, at)
		}
		if errors.Is(err, ledger.ErrNoActiveRun) && fromCache {
			fromCache = false
			continue
		}
		if errors.Is(err, ledger.ErrNoActiveRun) {
			// The account no longer holds the run: it ended meanwhile,
			// canceled by its owner (a cancel settles the account in its
			// own write). Nothing is left to do, and nothing went wrong.
			if ended, rerr := x.endedElsewhere(ctx, w); rerr != nil || ended {
				return rerr
			}
		}
		if err != nil {
			return internal("settle or refund", err)
		}
		_, err = x.svc.log.Append(ctx, finishWrite(w.run, w.last, acctEv, acctSeq, term, w.svc.hookKeep())...)
		if errors.Is(err, port.ErrConflict) {
			events, rerr := x.svc.log.RunLog(ctx, w.run.RunNo, w.last)
			if rerr != nil {
				return rerr
			}
			if len(events) > 0 {
				// Someone else wrote the run meanwhile: a cancel (which
				// ended it), or another executor (a job delivered again
				// while this one still ran). Done only if the run has
				// ended: otherwise ask for the job again, or an ack here
				// would leave a run the other executor fails to finish
				// unfinished for ever (the simulation found this).
				if x.endedIn(w, events) {
					return nil
				}
				return errRunMoved
			}
			continue // the account moved: read it again
		}
		if err == nil {
			x.svc.counters.ended(fail == nil, w.run.CreditCost)
		}
		return err
	}
	return errors.New("service: finish: too much contention")
}

// runEventWrite appends ev, stamped with the event version, to its run's
// log (at sequence last) while the run runs: started, a step.
func runEventWrite(last uint64, ev engine.RunEvent) store.Entry {
	ev.V = engine.EventVersion
	return store.Entry{Subject: subjects.Run(ev.RunNo), Value: ev, Expect: store.ExpectSeq(last)}
}
