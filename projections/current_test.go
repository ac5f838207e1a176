package projections_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/projections"
)

// Current reads an account as of its newest event in the log: it waits
// for the store to apply it, and when the store cannot get there in time
// the read fails as unavailable instead of answering stale.
func TestCurrentWaitsForTheLogOrAnswersUnavailable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	acct, err := f.eng.OpenAccount(ctx, "a@example.com", 10)
	if err != nil {
		t.Fatal(err)
	}
	s := f.open(t)
	defer s.Close()
	waitFor(t, s, acct.Seq)
	s.Stop() // the store falls behind from here
	if _, _, err := f.eng.GrantCredits(ctx, acct.AccountID, 5); err != nil {
		t.Fatal(err)
	}
	cur := projections.NewCurrent(s, f.eng, 200*time.Millisecond)
	if a, err := cur.Account(acct.AccountID); !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("read of an account the store has not caught up with: %+v %v, want unavailable", a, err)
	}
	if a, err := s.Account(acct.AccountID); err != nil || a.Balance != 10 {
		t.Fatalf("the store itself: %+v %v, want the stale balance 10", a, err)
	}
	s.Close()

	fresh := f.open(t)
	defer fresh.Close()
	cur = projections.NewCurrent(fresh, f.eng, 5*time.Second)
	if a, err := cur.Account(acct.AccountID); err != nil || a.Balance != 15 {
		t.Fatalf("read through Current: %+v %v, want the granted balance 15", a, err)
	}
	if _, err := cur.Run("run_aaaaaaaaaaaaaaaa"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a run the log does not hold: %v, want not found", err)
	}
}
