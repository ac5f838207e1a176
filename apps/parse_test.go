package apps

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A parse whose context ends is not waited for: bounded returns at once,
// and the parse keeps its slot until it ends, so that parses left behind
// still count against Env.Parses.
func TestBoundedReturnsAtACancelAndTheParseKeepsItsSlot(t *testing.T) {
	t.Parallel()
	env := (&Env{Parses: 1}).withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	running, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := bounded(ctx, env, func(context.Context) (int, error) {
			close(running)
			<-release // a parse that does not look at its context
			return 1, nil
		})
		done <- err
	}()
	<-running
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("bounded after a cancel: %v, want context.Canceled", err)
	}
	// The slot is still the parse's: another waits, and gives up with its
	// own context.
	short, stop := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer stop()
	if _, err := bounded(short, env, func(context.Context) (int, error) { return 2, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a parse while the slot is held: %v, want it to wait until its deadline", err)
	}
	close(release)
	v, err := bounded(context.Background(), env, func(context.Context) (int, error) { return 3, nil })
	if err != nil || v != 3 {
		t.Fatalf("a parse once the slot is free: %v %v", v, err)
	}
}
