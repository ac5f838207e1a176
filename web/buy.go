package web

import (
	"net/http"
	"strings"

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
		if engine.ErrorCode(err) == engine.CodeInvalidInput {
			msg = "That pack is no longer on sale. Pick one below."
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
