package billing

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/apprun/apprun/engine"
)

// SignatureTolerance is how far a Stripe-Signature's timestamp may be
// from this server's clock, either side: stripe-go's default, 5 minutes.
//
// stripe-go's ConstructEvent refuses only a timestamp older than that
// (its validatePayload tests time.Since(t) > tolerance), so one dated a
// day ahead verifies, and stays replayable for that day. stripe-php made
// its check two-sided in 6.35.1 (stripe/stripe-php#657); here stripe-go
// checks the signature and the API version with its own tolerance off,
// and the window is checked on both sides below, on the seller's clock.
const SignatureTolerance = webhook.DefaultTolerance

// verify returns the event of a delivery whose signature, timestamp and
// API version verify, or invalid_signature.
func (s *Stripe) verify(payload []byte, header string) (stripe.Event, error) {
	ev, err := webhook.ConstructEventWithOptions(payload, header, s.cfg.WebhookSecret,
		webhook.ConstructEventOptions{IgnoreTolerance: true})
	if err == nil {
		err = inWindow(header, s.now())
	}
	if err != nil {
		return stripe.Event{}, engine.Errorf(engine.CodeInvalidSignature,
			"the event does not verify (Stripe-Signature, its timestamp within %s of now, or its API version %s): %v", SignatureTolerance, APIVersion, err)
	}
	return ev, nil
}

// inWindow checks the signed timestamp: the header's last t= value, the
// one stripe-go signs with ("t=1495999758,v1=…", pairs split on commas,
// each on its '=').
func inWindow(header string, now time.Time) error {
	var at time.Time
	found := false
	for _, pair := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || k != "t" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("timestamp %q is not a number", v)
		}
		at, found = time.Unix(n, 0), true
	}
	switch d := now.Sub(at); {
	case !found:
		return fmt.Errorf("no timestamp")
	case d > SignatureTolerance:
		return fmt.Errorf("signed %s ago", d.Round(time.Second))
	case d < -SignatureTolerance:
		return fmt.Errorf("signed %s in the future", (-d).Round(time.Second))
	}
	return nil
}
