// Package sim is the deterministic simulation of apprun's money path, in
// the manner of FoundationDB's simulation testing and TigerBeetle's VOPR:
// one seed drives one whole, reproducible history. The real engine runs on
// a simulated log (package simlog) that injects faults; actors (clients,
// executors) run one at a time, and at every log operation a seeded
// scheduler picks who goes next, so a seed fixes the interleaving, the
// faults, the crashes and the clock. sim_test.go holds the driver and the
// invariants; `make sim SEEDS=n` runs n seeds, `SEED=s` replays one.
package sim

import (
	"context"
	"math/rand/v2"
)

// crash is the panic that unwinds an actor whose node crashed (Survive
// recovers it).
type crash struct{}

// Incarnation is one life of a node: a crash ends it, and every actor
// working for it stops at its next step.
type Incarnation struct{ dead bool }

// Kill ends the incarnation.
func (i *Incarnation) Kill() { i.dead = true }

// Dead reports whether the incarnation ended.
func (i *Incarnation) Dead() bool { return i.dead }

type actor struct {
	wake chan struct{}
}

type report struct {
	a    *actor
	done bool
}

type ctxKey struct{}

type actorCtx struct {
	a   *actor
	inc *Incarnation
}

// Sched runs actors one at a time; each runs until its next Step, then the
// scheduler picks the next with its seeded random source.
type Sched struct {
	Rng  *rand.Rand
	live []*actor
	back chan report
	// Between runs before every pick: the driver injects crashes, moves
	// the clock, and may Go new actors.
	Between func()
	steps   int
}

// NewSched makes a scheduler seeded with seed.
func NewSched(seed uint64) *Sched {
	return &Sched{Rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), back: make(chan report)}
}

// Go adds an actor; it starts when it is first picked.
func (s *Sched) Go(fn func(ctx context.Context)) {
	a := &actor{wake: make(chan struct{})}
	s.live = append(s.live, a)
	go func() {
		<-a.wake
		defer func() { s.back <- report{a: a, done: true} }()
		fn(context.WithValue(context.Background(), ctxKey{}, &actorCtx{a: a}))
	}()
}

// Step is a scheduling point: the actor of ctx parks and waits to be
// picked again. It panics (unwinding to the nearest Survive) when the
// incarnation the actor works for has crashed meanwhile. A context with
// no actor (set-up) passes straight through.
func (s *Sched) Step(ctx context.Context) {
	ac, _ := ctx.Value(ctxKey{}).(*actorCtx)
	if ac == nil {
		return
	}
	s.back <- report{a: ac.a}
	<-ac.a.wake
	if ac.inc != nil && ac.inc.dead {
		panic(crash{})
	}
}

// Run picks actors until none is left, or steps run out (a livelock):
// it returns false then.
func (s *Sched) Run(maxSteps int) bool {
	for len(s.live) > 0 {
		if s.steps++; s.steps > maxSteps {
			return false
		}
		if s.Between != nil {
			s.Between()
		}
		i := s.Rng.IntN(len(s.live))
		a := s.live[i]
		a.wake <- struct{}{}
		r := <-s.back
		if r.done {
			s.live = append(s.live[:i], s.live[i+1:]...)
		}
	}
	return true
}

// Steps is how many picks the scheduler made.
func (s *Sched) Steps() int { return s.steps }

// On returns ctx for work done for incarnation inc: the work stops at its
// next step once inc is dead.
func On(ctx context.Context, inc *Incarnation) context.Context {
	ac, _ := ctx.Value(ctxKey{}).(*actorCtx)
	if ac == nil {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, &actorCtx{a: ac.a, inc: inc})
}

// Survive runs fn and reports whether it ended without its node crashing
// under it.
func Survive(fn func()) (survived bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
			survived = false
		}
	}()
	fn()
	return true
}
