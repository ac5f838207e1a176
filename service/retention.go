package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// sweepBatch bounds how many runs one sweep expires.
const sweepBatch = 500

// sweeper removes the logs of runs past their App's retention window, and
// writes the ledger's checkpoints (checkpoint.go).
type sweeper struct {
	svc  *Service
	done chan struct{}
	over chan struct{}
}

func startSweeper(e *Service) *sweeper {
	s := &sweeper{svc: e, done: make(chan struct{}), over: make(chan struct{})}
	go s.loop()
	return s
}

func (s *sweeper) stop() {
	close(s.done)
	<-s.over
}

func (s *sweeper) loop() {
	defer close(s.over)
	t := time.NewTicker(s.svc.cfg.SweepEvery)
	defer t.Stop()
	cp := time.NewTicker(s.svc.cfg.CheckpointEvery)
	defer cp.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-cp.C:
			s.svc.checkpointNow()
		case <-t.C:
			if n, err := s.svc.ExpireRuns(context.Background()); err != nil {
				s.svc.cfg.Logger.Warn("retention sweep failed; will retry", "expired", n, "err", err)
			}
			if err := s.svc.CompactSlots(context.Background()); err != nil {
				s.svc.cfg.Logger.Warn("slot compaction failed; will retry", "err", err)
			}
		}
	}
}

// CompactSlots keeps only the newest message of each platform slot: a
// slot's history (a claim and a release per run) is no part of the billing
// record, and only its newest message is ever read (for the compare-and-set
// of the next claim, which compaction keeps valid). The sweep runs it every
// SweepEvery, so slot subjects hold about one message per slot.
func (s *Service) CompactSlots(ctx context.Context) error {
	slots, err := s.ports.Log.Subjects(ctx, subjects.SlotPrefix+">")
	if err != nil {
		return internal("list slots", err)
	}
	for _, slot := range slots {
		if err := s.ports.Log.Compact(ctx, slot); err != nil {
			return internal("compact slot", err)
		}
	}
	return nil
}

// ExpireRuns removes every run past its App's retention and returns how
// many it removed. Safe on several nodes at once: the expiry marker is a
// compare-and-set, and purging twice is harmless.
func (s *Service) ExpireRuns(ctx context.Context) (int, error) {
	shortest := time.Duration(1<<63 - 1)
	for _, a := range s.cfg.Catalog.All() {
		shortest = min(shortest, a.Retention)
	}
	now := s.now()
	runs, err := s.cfg.Reads.FinishedBefore(now.Add(-shortest), sweepBatch)
	if err != nil {
		return 0, internal("list finished runs", err)
	}
	n := 0
	for _, r := range runs {
		retention := 30 * 24 * time.Hour
		if a, ok := s.cfg.Catalog.Get(r.AppSlug); ok {
			retention = a.Retention
		}
		if now.Before(r.FinishedAt.Add(retention)) {
			continue
		}
		if err := s.expire(ctx, r); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (s *Service) expire(ctx context.Context, r engine.FinishedRun) error {
	marker := engine.RunExpired{Type: "run_expired", V: engine.EventVersion, At: s.now(), RunNo: r.RunNo, AccountID: r.AccountID,
		AppSlug: r.AppSlug, Status: r.Status, CreditCost: r.CreditCost}
	_, err := s.log.Append(ctx, store.Entry{Subject: subjects.Expired(r.RunNo), Value: marker, Expect: store.ExpectSeq(0)})
	if err != nil && !errors.Is(err, port.ErrConflict) {
		return internal("mark run expired", err)
	}
	s.finished.Drop(r.RunNo)
	for _, subj := range []string{subjects.Run(r.RunNo), subjects.Job(r.RunNo)} {
		if err := s.ports.Log.Purge(ctx, subj); err != nil {
			return internal(fmt.Sprintf("purge %s", subj), err)
		}
	}
	return nil
}
