package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/apprun/apprun/billing"
	"github.com/apprun/apprun/engine"
)

// Seller sells Credits (package billing, on Stripe Checkout).
type Seller = billing.Seller

func (s *Site) selling() bool { return s.cfg.Seller != nil && s.cfg.Seller.Selling() }

// buy starts a Checkout for the pack in the form and sends the buyer to
// Stripe's page (303). The Credits come with Stripe's webhook, never with
// the return to /credits.
func (s *Site) buy(w http.ResponseWriter, r *http.Request, v viewer) {
	if !s.selling() {
		s.redirectWith(w, r, "/credits", flash{Problem: "This server does not sell Credits; ask its operator to add them."})
		return
	}
	sess, err := s.cfg.Seller.Checkout(r.Context(), v.AccountID, strings.TrimSpace(r.PostFormValue("pack")))
	if err != nil {
		msg := "Stripe did not open a checkout. Nothing was charged; try again in a moment."
		var e *engine.Error
		switch {
		case engine.ErrorCode(err) == engine.CodeInvalidInput:
			msg = "That pack is no longer on sale. Pick one below."
		case errors.As(err, &e) && e.Code == engine.CodeRateLimited:
			msg = fmt.Sprintf("You opened %d checkouts in the last hour, the most there may be. You can open another in %s; a pack whose checkout is still open opens it again.",
				billing.CheckoutsPerHour, inWords(e.RetryAfter))
		}
		s.redirectWith(w, r, "/credits", flash{Problem: msg})
		return
	}
	http.Redirect(w, r, sess.URL, http.StatusSeeOther)
}

// purchaseNotice is what the Credits page says on the return from Stripe.
func purchaseNotice(q string) string {
	switch q {
	case "complete":
		return "Thank you. Your Credits are added as soon as Stripe confirms the payment, usually within seconds: reload this page to see them."
	case "canceled":
		return "Checkout was canceled. Nothing was charged."
	}
	return ""
}

// inWords is a wait as a buyer reads it: "12 minutes", "1 minute".
func inWords(d time.Duration) string {
	m := int((d + time.Minute - 1) / time.Minute)
	if m == 1 {
		return "1 minute"
	}
	return fmt.Sprintf("%d minutes", m)
}
