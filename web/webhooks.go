package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/service"
	"github.com/gorilla/mux"
)

// Webhooks: the account's endpoints (add, remove after asking), its
// signing secret (shown whole once, after it is made or rotated), and the
// recent deliveries with a Redeliver button per run.

// deliveriesShown is how many recent deliveries the page lists.
const deliveriesShown = 50

// urlWords say each of service.CheckWebhookURL's refusals to a customer.
var urlWords = map[string]string{
	service.URLNotHTTP:     "Enter a full web address starting with https:// (or http://), without a user name or password.",
	service.URLNoHost:      "This address names no host: write it whole, like https://hooks.example.com/apprun.",
	service.URLBadPort:     "The port in this address must be a number from 1 to 65535.",
	service.URLOddIPv4:     "Write the IP address as four numbers separated by dots, like 203.0.113.7.",
	service.URLThisMachine: "This address points at the machine this service runs on. Use an address that can be reached on the internet.",
	service.URLPrivate:     "This address is on a private network or reserved. Use an address that can be reached on the internet.",
}

// deliveryRow is a line of the recent deliveries.
type deliveryRow struct {
	service.Delivery
	AppName string
	// Redeliver is set on the first line of each run: a redelivery sends
	// to every address of the run.
	Redeliver bool
}

// deliveryStatus words a delivery's state.
var deliveryStatus = map[string]string{"delivered": "Delivered", "retrying": "Retrying", "failed": "Failed"}

// secretShown is how much of the signing secret the page shows after the
// first time: enough to tell it from another.
func secretShown(secret string) string {
	if n := len("whsec_") + 4; len(secret) > n {
		return secret[:n] + "…"
	}
	return secret
}

func (s *Site) webhooksPage(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx := r.Context()
	endpoints, _, err := s.cfg.Engine.WebhookEndpoints(ctx, v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	secret, made, err := s.cfg.Engine.WebhookSecretMade(ctx, v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ds, err := s.cfg.Engine.Deliveries(ctx, v.AccountID, deliveriesShown)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows, seen := make([]deliveryRow, 0, len(ds)), map[string]bool{}
	for _, d := range ds {
		row := deliveryRow{Delivery: d, AppName: "Run", Redeliver: !seen[d.RunNo]}
		if run, err := s.cfg.Reads.Run(d.RunNo); err == nil && run.AccountID == v.AccountID {
			row.AppName = s.appName(run.AppSlug)
		}
		seen[d.RunNo] = true
		rows = append(rows, row)
	}
	f, _ := s.sessions.takeFlash(ctx, r)
	data := map[string]any{"Endpoints": endpoints, "Max": service.MaxWebhookEndpoints, "Full": len(endpoints) >= service.MaxWebhookEndpoints,
		"Made": made, "Shown": secretShown(secret), "Secret": f.Secret, "Deliveries": rows, "StatusWords": deliveryStatus, "Notice": f.Notice,
		"URL": f.Form.Get("url"), "URLError": f.Errors["url"]}
	s.render(w, r, http.StatusOK, "webhooks", "Webhooks", data, problemOf(f)...)
}

// addEndpoint registers the form's URL. The account's first endpoint
// makes its signing secret, shown on the page the redirect lands on.
func (s *Site) addEndpoint(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx, raw := r.Context(), strings.TrimSpace(r.PostFormValue("url"))
	if raw == "" {
		s.redirectWith(w, r, "/settings/webhooks#add", flash{Errors: map[string]string{"url": "Enter the address that should receive your runs' results."},
			Problem: "The endpoint was not added: 1 field to fix below."})
		return
	}
	_, made, err := s.cfg.Engine.WebhookSecretMade(ctx, v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ep, err := s.cfg.Engine.AddWebhookEndpoint(ctx, v.AccountID, raw)
	var e *engine.Error
	if errors.As(err, &e) && e.Code == engine.CodeInvalidRequest {
		words := "This address cannot receive webhooks: check it and try again."
		switch {
		case len(e.Fields) == 0: // the one refusal of no field
			words = fmt.Sprintf("An account has at most %d endpoints: remove one to add another.", service.MaxWebhookEndpoints)
		case e.Fields[0].Code == service.URLTooLong:
			words = fmt.Sprintf("This address is too long: use at most %s characters (this has %s).", groupThousands(service.MaxWebhookURL),
				groupThousands(int64(len(raw))))
		case urlWords[e.Fields[0].Code] != "":
			words = urlWords[e.Fields[0].Code]
		}
		s.redirectWith(w, r, "/settings/webhooks#add", flash{Form: url.Values{"url": {raw}}, Errors: map[string]string{"url": words},
			Problem: "The endpoint was not added: 1 field to fix below."})
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	next := flash{Notice: fmt.Sprintf("%s was added: runs you start from now on send their result there when they finish.", ep.URL)}
	if !made {
		if next.Secret, err = s.cfg.Engine.WebhookSecret(ctx, v.AccountID); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	s.redirectWith(w, r, "/settings/webhooks", next)
}

// ownEndpoint is one of the viewer's endpoints; another account's looks
// like none at all.
func (s *Site) ownEndpoint(w http.ResponseWriter, r *http.Request, v viewer) (service.WebhookEndpoint, bool) {
	list, _, err := s.cfg.Engine.WebhookEndpoints(r.Context(), v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return service.WebhookEndpoint{}, false
	}
	for _, ep := range list {
		if ep.ID == mux.Vars(r)["endpoint_id"] {
			return ep, true
		}
	}
	s.problem(w, r, http.StatusNotFound, "There is no such webhook endpoint on your account.")
	return service.WebhookEndpoint{}, false
}

// removeEndpointPage asks before an endpoint is removed.
func (s *Site) removeEndpointPage(w http.ResponseWriter, r *http.Request, v viewer) {
	if ep, ok := s.ownEndpoint(w, r, v); ok {
		s.render(w, r, http.StatusOK, "endpoint_remove", "Remove a webhook endpoint", map[string]any{"Endpoint": ep})
	}
}

func (s *Site) removeEndpoint(w http.ResponseWriter, r *http.Request, v viewer) {
	ep, ok := s.ownEndpoint(w, r, v)
	if !ok {
		return
	}
	err := s.cfg.Engine.RemoveWebhookEndpoint(r.Context(), v.AccountID, ep.ID)
	var e *engine.Error
	if errors.As(err, &e) && e.Code == engine.CodeNotFound { // removed meanwhile
		err = nil
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.redirectWith(w, r, "/settings/webhooks", flash{Notice: fmt.Sprintf("%s was removed: runs you start from now on no longer send there. Runs made before still do.", ep.URL)})
}

// rotateSecretPage asks before the signing secret is replaced.
func (s *Site) rotateSecretPage(w http.ResponseWriter, r *http.Request, v viewer) {
	secret, made, err := s.cfg.Engine.WebhookSecretMade(r.Context(), v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !made {
		http.Redirect(w, r, "/settings/webhooks", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "secret_rotate", "Rotate the signing secret", map[string]any{"Shown": secretShown(secret)})
}

// rotateSecret makes a new signing secret (the first, if there is none)
// and shows it once.
func (s *Site) rotateSecret(w http.ResponseWriter, r *http.Request, v viewer) {
	secret, err := s.cfg.Engine.RotateWebhookSecret(r.Context(), v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.redirectWith(w, r, "/settings/webhooks", flash{Secret: secret,
		Notice: "Your new signing secret is below. Every delivery from now on is signed with it, retries of earlier runs too."})
}

// redeliver sends a finished run's webhook again, to every address of the
// run; one sending a minute at most.
func (s *Site) redeliver(w http.ResponseWriter, r *http.Request, v viewer) {
	runNo := mux.Vars(r)["run_no"]
	err := s.cfg.Engine.Redeliver(r.Context(), v.AccountID, runNo)
	var e *engine.Error
	switch {
	case errors.As(err, &e) && e.Code == engine.CodeRateLimited:
		s.redirectWith(w, r, "/settings/webhooks#deliveries", flash{Problem: fmt.Sprintf("Run %s's webhook was sent less than %s ago; try again in %s.",
			runNo, every(service.RedeliverEvery), seconds(e.RetryAfter))})
	case errors.As(err, &e) && e.Code == engine.CodeRunNotFound:
		s.problem(w, r, http.StatusNotFound, "There is no such run on your account.")
	case errors.As(err, &e) && e.Code == engine.CodeInvalidRequest:
		s.redirectWith(w, r, "/settings/webhooks#deliveries", flash{Problem: fmt.Sprintf("Run %s's webhook cannot be sent again: the run has not finished, or it has no address to send to.", runNo)})
	case err != nil:
		s.fail(w, r, err)
	default:
		s.redirectWith(w, r, "/settings/webhooks#deliveries", flash{Notice: fmt.Sprintf("Run %s's webhook will be sent again in a moment, to every address of the run.", runNo)})
	}
}

// every words an interval: "a minute", "5 minutes".
func every(d time.Duration) string {
	if d == time.Minute {
		return "a minute"
	}
	return human(d)
}

// seconds words a wait in whole seconds, rounded up: "40 s".
func seconds(d time.Duration) string {
	return fmt.Sprintf("%d s", max(1, int(math.Ceil(d.Seconds()))))
}
