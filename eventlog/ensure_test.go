package eventlog_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/eventlog"
)

// A create the server leaves unanswered (another member's equal create
// won) ends as soon as a lookup finds the stream as wanted, not when the
// create times out; a lookup that finds it otherwise configured does not.
func TestEnsureTakesWhatAnotherMemberCreated(t *testing.T) {
	t.Parallel()
	var lookups atomic.Int32
	unanswered := func(ctx context.Context) (string, error) { <-ctx.Done(); return "", ctx.Err() }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := eventlog.Ensure(ctx, unanswered, func(context.Context) (string, bool) {
		return "made by another member", lookups.Add(1) >= 3 // found on the third look
	})
	if err != nil || got != "made by another member" {
		t.Fatalf("got %q, %v", got, err)
	}
	if ctx.Err() != nil {
		t.Fatal("Ensure waited for the unanswered create")
	}

	// Found with another configuration, never taken: the create's own
	// outcome decides.
	short, cancelShort := context.WithTimeout(context.Background(), time.Second)
	defer cancelShort()
	_, err = eventlog.Ensure(short, unanswered, func(context.Context) (string, bool) { return "other config", false })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a stream found with another configuration was taken: %v", err)
	}
	// A create that answers wins.
	got, err = eventlog.Ensure(context.Background(), func(context.Context) (string, error) { return "created", nil },
		func(context.Context) (string, bool) { return "", false })
	if err != nil || got != "created" {
		t.Fatalf("got %q, %v", got, err)
	}
}
