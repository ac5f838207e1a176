package billing

import (
	"context"
	"testing"
	"time"

	"github.com/apprun/apprun/billing/stripemock"
	"github.com/apprun/apprun/engine"
)

// A delivery signed more than SignatureTolerance from the server's clock
// is refused, in the past as in the future (stripe-go checks only the
// past), and changes nothing; within it, either side, it is applied.
func TestSignaturesOutsideTheWindowEitherSideAreRefused(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Now().Truncate(time.Second)}
	f := &fakeEngine{}
	s := sellerWith(t, "", f, c)
	for _, tc := range []struct {
		name string
		at   time.Duration
		ok   bool
	}{
		{"a day ahead", 24 * time.Hour, false},
		{"just past the window ahead", SignatureTolerance + time.Second, false},
		{"at the window's edge ahead", SignatureTolerance, true},
		{"a minute ahead", time.Minute, true},
		{"now", 0, true},
		{"at the window's edge behind", -SignatureTolerance, true},
		{"just past the window behind", -SignatureTolerance - time.Second, false},
		{"an hour old", -time.Hour, false},
	} {
		before := len(f.grants)
		body, sig := stripemock.Event(secret, "evt_sig", "checkout.session.completed",
			stripemock.Session("cs_sig", "acct_a", "100-500-usd", "paid", "", 500), c.now().Add(tc.at))
		err := s.Handle(context.Background(), body, sig)
		switch {
		case tc.ok && (err != nil || len(f.grants) != before+1):
			t.Errorf("%s: %v, %d grants: want it applied", tc.name, err, len(f.grants)-before)
		case !tc.ok && (engine.ErrorCode(err) != engine.CodeInvalidSignature || len(f.grants) != before):
			t.Errorf("%s: %v, %d grants: want invalid_signature and nothing applied", tc.name, err, len(f.grants)-before)
		}
	}
}

// The window reads the timestamp stripe-go signs with: the header's last
// t=; a header without one, or with one that is not a number, is refused.
func TestTheWindowReadsTheSignedTimestamp(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	for header, ok := range map[string]bool{
		"t=1800000000,v1=ab":              true,
		"t=1700000000,v1=ab,t=1800000000": true,
		"t=1800000000,v1=ab,t=1700000000": false,
		"v1=ab":                           false,
		"t=soon,v1=ab":                    false,
		"t=99999999999999999,v1=ab":       false,
	} {
		if err := inWindow(header, now); (err == nil) != ok {
			t.Errorf("%q: %v, want ok=%v", header, err, ok)
		}
	}
}
