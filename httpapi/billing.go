package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/apprun/apprun/billing"
	"github.com/apprun/apprun/engine"
)

// Seller sells Credits (package billing, on Stripe).
type Seller = billing.Seller

// howToAdd is what a server that sells no Credits says about adding them.
const howToAdd = "This server does not sell Credits. Its operator adds them: apprun admin credits grant --reason <why> <account_id> <credits>."

func (a *API) routeBilling() {
	a.router.HandleFunc("/api/v1/billing/packs", a.reader(a.listPacks)).Methods(http.MethodGet)
	a.router.HandleFunc("/api/v1/billing/checkout", a.reader(a.checkout)).Methods(http.MethodPost)
	a.router.HandleFunc("/billing/stripe/webhook", a.stripeWebhook).Methods(http.MethodPost)
	a.router.HandleFunc("/admin/v1/billing/unmatched", a.admin(a.unmatchedPayments)).Methods(http.MethodGet)
}

func (a *API) seller() Seller {
	if a.cfg.Billing == nil {
		return notSelling{}
	}
	return a.cfg.Billing
}

// listPacks answers the packs on sale, or none and how Credits are added.
func (a *API) listPacks(w http.ResponseWriter, r *http.Request, _ caller) {
	s := a.seller()
	body := map[string]any{"data": s.Packs(), "selling": s.Selling()}
	if !s.Selling() {
		body["how_to_add"] = howToAdd
	}
	writeJSON(w, http.StatusOK, body)
}

// checkout creates a Stripe Checkout Session for {"pack": id} (201): the
// client sends the buyer to its url. Credits come only with Stripe's
// webhook, never with the return to the success page.
func (a *API) checkout(w http.ResponseWriter, r *http.Request, c caller) {
	obj, err := readJSONObject(w, r)
	if err == nil {
		err = onlyFields(obj, "pack")
	}
	var pack string
	if err == nil {
		var ok bool
		pack, ok, err = stringField(obj, "pack")
		if err == nil && !ok {
			err = errorf(engine.CodeInvalidRequest, "pack is required: one of GET /api/v1/billing/packs")
		}
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	s, err := a.seller().Checkout(r.Context(), c.AccountID, pack)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, s)
}

// maxWebhookBody bounds a Stripe event (theirs are a few KiB).
const maxWebhookBody = 256 << 10

// stripeWebhook takes Stripe's events: verified by signature, applied
// once; 200 for every verified event, 400 for one that does not verify
// (nothing changes), 503 when the log cannot be written (Stripe retries).
func (a *API) stripeWebhook(w http.ResponseWriter, r *http.Request) {
	// What can be judged from the headers is, before the body is read.
	switch {
	case !a.seller().Selling():
		a.refuseUnread(w, r, errorf(engine.CodeCreditsNotSold, "%s", howToAdd))
		return
	case r.Header.Get("Stripe-Signature") == "":
		a.refuseUnread(w, r, errorf(engine.CodeInvalidSignature, "the event has no Stripe-Signature header"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			a.fail(w, r, errorf(engine.CodeInvalidRequest, "request body exceeds %d bytes", maxWebhookBody))
			return
		}
		a.fail(w, r, errorf(engine.CodeInvalidRequest, "could not read the request body"))
		return
	}
	if err := a.seller().Handle(r.Context(), body, r.Header.Get("Stripe-Signature")); err != nil {
		a.fail(w, r, err)
		return
	}
	// Answer once the read models show what the event wrote, so a balance
	// read after the answer includes it (the write is durable either way).
	if head, err := a.cfg.Engine.LogHead(r.Context()); err == nil {
		_ = a.awaitRead(r.Context(), head)
	}
	writeJSON(w, http.StatusOK, map[string]bool{"received": true})
}

// unmatchedPayments lists the paid notices no account or pack matched.
func (a *API) unmatchedPayments(w http.ResponseWriter, r *http.Request) {
	list, err := a.cfg.Engine.UnmatchedPayments(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeList(w, list)
}

// notSelling is the Seller of a server without Stripe.
type notSelling struct{}

func (notSelling) Selling() bool         { return false }
func (notSelling) Packs() []billing.Pack { return []billing.Pack{} }
func (notSelling) Checkout(context.Context, string, string) (billing.Session, error) {
	return billing.Session{}, errorf(engine.CodeCreditsNotSold, "%s", howToAdd)
}
func (notSelling) Handle(context.Context, []byte, string) error {
	return errorf(engine.CodeCreditsNotSold, "%s", howToAdd)
}
