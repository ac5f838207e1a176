package service

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// CreateRunRequest is a validated-in-shape request to run an App.
type CreateRunRequest struct {
	AccountID string
	KeyID     string
	AppSlug   string
	Input     map[string]any
	// BrandContextID is nil when the request names none.
	BrandContextID *string
	// WebhookURL, when set, receives the run's terminal event.
	WebhookURL string
	// MaxCreditCost, when set, is the most the client agrees to pay: a
	// higher price is refused with pricing_not_ready, nothing charged.
	MaxCreditCost *int64
	// IdempotencyKey, when set, makes the request safe to retry: the same
	// key with the same request (requestHash: the fields above) returns the
	// first answer.
	IdempotencyKey string
	// Model, when set, is the model the run asks for instead of the
	// node's; RerunOf is the run a rerun reruns (rerun.go).
	Model        string
	RerunOf      string
	RerunChanges []string
}

// CreatedRun is what admission returns.
type CreatedRun struct {
	RunNo      string
	CreditCost int64
	// Seq is the sequence of the run's created event: the last of the
	// admission write, so a projection that reached it has all of it.
	Seq uint64
	// Replayed is true when an Idempotency-Key returned an earlier answer.
	Replayed bool
	// Quota is where the key stands in the creation window (set when the
	// create was counted, or refused by the limit).
	Quota Quota
}

// CreateRun admits a run: checks in the spec's order (App 404, price 409,
// balance 402, input 422, brand context 422, rate 429), then one atomic
// write of the charge, a platform slot, the price check and the run's first
// event. Each part is compare-and-set on its subject, so two creates can never
// spend the same Credits or the same slot, and a price changed in between
// answers pricing_not_ready instead of charging an old price.
//
// The answer does not wait for the read models: admit notes the
// admission's sequence as Acknowledged, and the surfaces' reads wait for
// it instead.
func (s *Service) CreateRun(ctx context.Context, req CreateRunRequest) (CreatedRun, error) {
	if err := CheckNoFiles(req.Input); err != nil {
		return CreatedRun{}, err // on every surface, before anything is claimed
	}
	if req.WebhookURL != "" {
		if err := s.CheckWebhookURL(req.WebhookURL); err != nil {
			return CreatedRun{}, err
		}
	}
	if req.IdempotencyKey == "" {
		return s.createRun(ctx, req, nil)
	}
	if !ValidIdempotencyKey(req.IdempotencyKey) {
		e := engine.Errorf(engine.CodeInvalidRequest, "Idempotency-Key must be 1 to %d printable ASCII characters", MaxIdempotencyKey)
		e.Fields = []engine.FieldError{{Field: "idempotency_key", Code: "format", Message: e.Message}}
		return CreatedRun{}, e
	}
	key, replay, err := s.readIdempotency(ctx, req.AccountID, req.IdempotencyKey, requestHash(req))
	if err != nil {
		return CreatedRun{}, err
	}
	if replay != nil {
		return *replay, nil // created before; a read of its run finds it in the log
	}
	run, err := s.createRun(ctx, req, key)
	var refused *engine.Error
	if errors.As(err, &refused) {
		// Refused, nothing written. A request with the same key that ran
		// at the same time may have created the run: then it is the answer.
		if replay, rerr := s.moved(ctx, key); rerr == nil && replay != nil {
			return *replay, nil
		}
	}
	return run, err
}

func (s *Service) createRun(ctx context.Context, req CreateRunRequest, key *idemKey) (CreatedRun, error) {
	app, err := s.cfg.Catalog.Lookup(req.AppSlug)
	if err != nil {
		return CreatedRun{}, err
	}
	// The price and the account come from the cache (the store's lastCache): the
	// admission's write checks both sequences. A refusal is confirmed by
	// a read of the log first.
	price, priceCached, err := s.admissionPrice(ctx, app.Slug, true)
	if err != nil {
		return CreatedRun{}, err
	}
	acct, acctSeq, err := s.log.Account(ctx, req.AccountID, true)
	if err != nil {
		return CreatedRun{}, err
	}
	// The price and the balance, decided before the input is checked
	// (no limit yet: those are decided when the run is written).
	decide := func() error {
		_, err := engine.Admit(engine.Admission{Account: acct, Price: price.Price, MaxCost: req.MaxCreditCost})
		return err
	}
	if decide() != nil {
		// Refused from the cache: decided again from the log.
		if price, priceCached, err = s.admissionPrice(ctx, app.Slug, false); err != nil {
			return CreatedRun{}, err
		}
		if acct, acctSeq, err = s.log.Account(ctx, req.AccountID, false); err != nil {
			return CreatedRun{}, err
		}
		if err := decide(); err != nil {
			return CreatedRun{}, err
		}
	}
	input, err := app.ValidateInput(req.Input)
	if err != nil {
		return CreatedRun{}, err
	}
	var brandID string
	if req.BrandContextID != nil {
		bc, err := s.brandContextFor(ctx, app, req.AccountID, *req.BrandContextID)
		if err != nil {
			return CreatedRun{}, err
		}
		brandID = bc.ID
	}
	// Read while the create is counted (below): a request refused before
	// here costs no read.
	endpoints := s.webhookEndpointsAhead(ctx, req.AccountID)
	// An account at its ceiling of active runs is refused before the
	// create is counted: a client told to wait for a run to finish must
	// not find the window spent by its refusals (issue 47). The cached
	// account is confirmed from the log first; the write decides again.
	// Only the ceiling is judged here: a 402 or another refusal comes
	// from the admission below, with its own checks (the simulation
	// caught a 402 this check gave from an account it had just read,
	// untrue of the price the request had).
	if lim := s.cfg.Limits.OwnerActiveRuns; lim > 0 && acct.Active >= lim {
		if acct, acctSeq, err = s.log.Account(ctx, req.AccountID, false); err != nil {
			return CreatedRun{}, err
		}
		if acct.Active >= lim {
			return CreatedRun{}, engine.AccountAtCeiling()
		}
	}
	quota, err := s.allow(ctx, limitCreate, req.KeyID)
	if err != nil {
		return CreatedRun{Quota: quota}, err
	}
	eps, err := endpoints()
	if err != nil {
		return CreatedRun{Quota: quota}, err
	}
	rawInput, err := json.Marshal(input)
	if err != nil {
		return CreatedRun{}, internal("encode input", err)
	}
	created := engine.RunEvent{Type: engine.RunCreated, V: engine.EventVersion, RunNo: s.newRunNo(), Created: &engine.Created{
		AccountID: req.AccountID, KeyID: req.KeyID, AppSlug: app.Slug, Input: rawInput, BrandContextID: brandID,
		CreditCost: price.CreditCost, WebhookURL: req.WebhookURL, AppVersion: app.Version, Model: req.Model,
		RerunOf: req.RerunOf, RerunChanges: req.RerunChanges}}
	for _, ep := range eps {
		created.Created.WebhookEndpoints = append(created.Created.WebhookEndpoints, ep.URL)
	}
	run, err := s.admit(ctx, created, acct, acctSeq, price, priceCached, req.MaxCreditCost, key)
	run.Quota = quota
	return run, err
}

// admissionPrice is an App's price as this node's admissions read it:
// from the copy they check (price.go).
func (s *Service) admissionPrice(ctx context.Context, slug string, cached bool) (store.CheckedPrice, bool, error) {
	return s.log.AdmissionPrice(ctx, slug, int(s.priceCopy.Load()), cached)
}

// admit writes the admission, deciding again from the log after a failed
// compare-and-set. acct and price may have come from the cache
// (the store's lastCache): then a refusal is only made from a read of the log, and
// when the price was the cache's (priceCached) and stale, the log's is the
// price. A price read from the log that changes before the write answers
// pricing_not_ready.
func (s *Service) admit(ctx context.Context, created engine.RunEvent, acct ledger.Account, acctSeq uint64, price store.CheckedPrice, priceCached bool, maxCost *int64, key *idemKey) (CreatedRun, error) {
	refused := 0 // batches the log refused outright (nothing stored)
	fromCache := true
	conflict := false // the last attempt's write was refused by a check
	for attempt := range s.casTries() {
		if attempt > 0 {
			before := acctSeq
			var err error
			if acct, acctSeq, err = s.Account(ctx, created.Created.AccountID); err != nil {
				return CreatedRun{}, err
			}
			now, _, err := s.admissionPrice(ctx, created.Created.AppSlug, false)
			if err != nil {
				return CreatedRun{}, err
			}
			if conflict && acctSeq == before && now.Check == price.Check && now.Seq == price.Seq &&
				s.movePriceCopyFrom(created.Created.AppSlug, price.Check) {
				// Refused while neither the account nor the price moved:
				// another node checks this copy (price.go). Check another.
				if now, _, err = s.admissionPrice(ctx, created.Created.AppSlug, false); err != nil {
					return CreatedRun{}, err
				}
			}
			conflict = false
			if key != nil {
				// Another request with the key may have created the run.
				if replay, err := s.moved(ctx, key); err != nil || replay != nil {
					if replay != nil {
						return *replay, nil
					}
					return CreatedRun{}, err
				}
			}
			changed := now.Seq != price.Seq
			if now.Check != price.Check {
				// Read on another subject (a copy written, or a price
				// newer than its copy, since): a change is in its terms.
				changed = now.CreditCost != price.CreditCost || now.Recalibrating != price.Recalibrating
				if !changed {
					price = now
				}
			}
			if changed {
				if !fromCache || !priceCached {
					return CreatedRun{}, engine.Errorf(engine.CodePricingNotReady, "the price of %q changed while the run was being created; retry to run at the current price", created.Created.AppSlug)
				}
				// The cached price was stale (another node set it): the
				// log's is the price this request meets, decided below as
				// at the start.
				price, created.Created.CreditCost = now, now.CreditCost
			}
			fromCache = false
		}
		created.At = s.now()
		// The charge is decided first: a refusal costs no read of the
		// platform's slots. Only an admission that stands looks for one.
		decision := engine.Admission{RunNo: created.RunNo, At: created.At, Account: acct, Price: price.Price,
			MaxCost: maxCost, OwnerActiveRuns: s.cfg.Limits.OwnerActiveRuns,
			Record: engine.HeadOf(created.RunNo, created.Created).Hash()}
		charge, err := engine.Admit(decision)
		created.Created.Slot = 0
		var slotSeq uint64
		if err == nil && s.cfg.Limits.PlatformActiveRuns > 0 {
			if created.Created.Slot, slotSeq, err = s.freeSlot(ctx, fromCache); err != nil {
				return CreatedRun{}, err
			}
			if created.Created.Slot == 0 {
				decision.PlatformFull = true
				charge, err = engine.Admit(decision)
			}
		}
		switch {
		case err != nil && fromCache:
			continue // a refusal is made from the log (the next attempt reads it)
		case err != nil:
			return CreatedRun{}, err
		}
		seq, err := s.log.Append(ctx, admission(created, charge, acctSeq, slotSeq, price, key)...)
		if errors.Is(err, port.ErrConflict) {
			conflict = true
			continue
		}
		if errors.Is(err, port.ErrUnavailable) && !store.IsAmbiguous(err) && refused < admitRetries && s.ports.Log.Available() {
			// Refused, nothing stored, and the log is not known to be down:
			// a leader election. Try again within the request's time
			// rather than answer 503 (without a quorum the log is known
			// down within 2 s, and the answer is 503 at once).
			s.cfg.Sleep(min(admitBackoff<<refused, admitMaxBackoff))
			refused++
			continue
		}
		if store.IsAmbiguous(err) {
			// Sent, outcome unknown: resolve it before answering (fence.go).
			var stored bool
			seq, stored, err = s.resolveAdmission(ctx, created.RunNo)
			switch {
			case err != nil:
				// With a key, a fence on it makes the batch impossible
				// later, and a retry with the key gets the run if it was
				// stored; without one (or when the fence is unanswered
				// too), a run found stored later is voided.
				if key == nil || !s.fence(context.WithoutCancel(ctx), key) {
					s.voidLater(created.Created.AccountID, created.RunNo, key)
				}
				return CreatedRun{}, err
			case !stored:
				return CreatedRun{}, errNothingCharged
			}
		}
		if err != nil {
			return CreatedRun{}, internal("admit run", err)
		}
		s.counters.charges.Add(1)
		s.counters.charged.Add(uint64(price.CreditCost))
		s.acked.Note(seq)
		return CreatedRun{RunNo: created.RunNo, CreditCost: price.CreditCost, Seq: seq}, nil
	}
	return CreatedRun{}, engine.Errorf(engine.CodeInternal, "too much contention on this account; retry")
}

// admission is the one atomic write that admits a run: the charge (CAS on
// the account), the platform slot when there is one (CAS on the slot), the
// job (checked against the price the run was charged), the completed
// Idempotency-Key record when there is one (where the key stood when read),
// and the run's created event (the first on its subject).
func admission(created engine.RunEvent, charge ledger.Event, acctSeq, slotSeq uint64, price store.CheckedPrice, key *idemKey) []store.Entry {
	entries := []store.Entry{{Subject: subjects.Account(created.Created.AccountID), Value: charge, Expect: store.ExpectSeq(acctSeq)}}
	if created.Created.Slot > 0 {
		entries = append(entries, store.Entry{Subject: subjects.Slot(created.Created.Slot), Expect: store.ExpectSeq(slotSeq),
			Value: engine.SlotEvent{Type: "slot_claimed", V: engine.EventVersion, RunNo: created.RunNo}})
	}
	entries = append(entries,
		store.Entry{Subject: subjects.Job(created.RunNo), Value: engine.JobEvent{Type: "run_queued", V: engine.EventVersion, RunNo: created.RunNo},
			Expect: store.ExpectSeq(price.Seq), ExpectSubject: price.CheckSubject()},
	)
	if key != nil {
		entries = append(entries, key.completed(created))
	}
	return append(entries, store.Entry{Subject: subjects.Run(created.RunNo), Value: created, Expect: store.ExpectSeq(0)})
}

// admitRetries, admitBackoff and admitMaxBackoff bound the tries of an
// admission the log refused (100 ms doubling to 2 s: 9.1 s in all, within
// the request's 30 s). A killed stream leader is replaced in 4 to 10 s;
// with 3.1 s, half the creates in that window answered 503.
const (
	admitRetries    = 8
	admitBackoff    = 100 * time.Millisecond
	admitMaxBackoff = 2 * time.Second
)

// freeSlot finds a platform slot that is free now, starting at a random
// index so concurrent creates rarely race for the same one. The claim is a
// compare-and-set, so a stale read only costs a retry.
//
// With cached set, slots are read from the cache (the claim's
// compare-and-set makes that exact, the store's lastCache), and "none free" is
// confirmed by reading them all from the log. None free is slot 0.
func (s *Service) freeSlot(ctx context.Context, cached bool) (int, uint64, error) {
	n := s.cfg.Limits.PlatformActiveRuns
	start := s.cfg.IntN(n)
	for i := range n {
		slot := 1 + (start+i)%n
		var ev engine.SlotEvent
		seq, _, err := s.log.LastFrom(ctx, cached, subjects.Slot(slot), &ev)
		if errors.Is(err, port.ErrNoMessage) {
			return slot, 0, nil
		}
		if err != nil {
			return 0, 0, internal("read slot", err)
		}
		if ev.Type == "slot_released" {
			return slot, seq, nil
		}
	}
	if cached {
		return s.freeSlot(ctx, false)
	}
	return 0, 0, nil // none free
}

// The API is JSON-only and accepts no files: an input value that is a file
// (a base64 data: URI, or an object carrying file members) is refused with
// invalid_request on every surface: CreateRun checks it before anything
// else.

// fileKeys are object members that mark an uploaded-file value.
var fileKeys = []string{"filename", "file_id", "file_data", "file_url", "mime_type", "content_base64"}

// fileField finds a file value in v, naming its path from `path`.
func fileField(v any, path string) (string, bool) {
	switch t := v.(type) {
	case string:
		s := strings.ToLower(strings.TrimSpace(t))
		if strings.HasPrefix(s, "data:") && strings.Contains(s, ";base64,") {
			return path, true
		}
	case map[string]any:
		for k := range t {
			if slices.Contains(fileKeys, strings.ToLower(k)) {
				return path, true
			}
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := fileField(t[k], path+"."+k); ok {
				return p, true
			}
		}
	case []any:
		for _, e := range t {
			if p, ok := fileField(e, path+"[]"); ok {
				return p, true
			}
		}
	}
	return "", false
}

// CheckNoFiles is the rule as an error: invalid_request naming the
// first file field.
func CheckNoFiles(input map[string]any) error {
	if path, ok := fileField(input, "input"); ok {
		return engine.Errorf(engine.CodeInvalidRequest, "%s is a file field; the API is JSON-only and does not accept files", path)
	}
	return nil
}

// webhookEndpointsAhead starts reading an account's webhook endpoints and
// returns what waits for the read. On a shared log the read is a round
// trip to the log (the cache is exact for them only on a standalone node,
// store.lastCache), which a create used to wait for before counting the
// request in its window, another round trip: the two now overlap, and a
// create waits for the slower of them (issue 50's cluster profile: 5 to
// 13 ms a create). A create refused before it needs them does not wait.
func (s *Service) webhookEndpointsAhead(ctx context.Context, accountID string) func() ([]store.WebhookEndpoint, error) {
	if s.cfg.Standalone {
		return func() ([]store.WebhookEndpoint, error) {
			eps, _, err := s.log.WebhookEndpoints(ctx, accountID, true)
			return eps, err
		}
	}
	type read struct {
		eps []store.WebhookEndpoint
		err error
	}
	done := make(chan read, 1)
	s.cfg.Go(func() {
		eps, _, err := s.log.WebhookEndpoints(ctx, accountID, false)
		done <- read{eps, err}
	})
	return func() ([]store.WebhookEndpoint, error) {
		r := <-done
		return r.eps, r.err
	}
}
