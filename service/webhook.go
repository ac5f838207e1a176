package service

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/service/worker"
	"github.com/apprun/apprun/subjects"
)

// Webhooks: a run created with a webhook_url gets its terminal event
// POSTed there, signed per Standard Webhooks with its account's secret.
// The terminal write itself (finish or cancel) stores a hook job in the
// same atomic batch, so a delivery is never lost; a durable consumer on
// the jobs delivers them, retrying with backoff for a day (JetStream
// redelivery: a restart resumes where it was). Each attempt's outcome is
// an event on the account's delivery subject, the delivery log.

// WebhookConfig configures deliveries.
type WebhookConfig struct {
	// AllowPrivate lets webhook URLs reach loopback and private addresses
	// (dev mode and tests); production refuses them, at create and when
	// dialling (so a name cannot be re-pointed inside).
	AllowPrivate bool
	// Backoff is the first retry delay (default 5s); it grows fivefold per
	// attempt up to an hour.
	Backoff time.Duration
	// Window is how long a delivery is retried (default 24h).
	Window time.Duration
	// Sender posts deliveries (package webhook); required by Start.
	Sender port.WebhookSender
}

const webhookConsumer = "apprun-webhooks"

// HookJob asks for a run's terminal event to be delivered to one of its
// targets (0: the run's webhook_url, or the first account endpoint).
type HookJob struct {
	RunNo  string    `json:"run_no"`
	V      int       `json:"v"`
	Target int       `json:"target"`
	At     time.Time `json:"at,omitzero"`
}

// hookJobs are the delivery jobs of a run's terminal write (or of a
// redelivery): one per target, written at `at`.
func hookJobs(run engine.Run, at time.Time, keep time.Duration) []store.Entry {
	var out []store.Entry
	for i := range run.WebhookTargets() {
		out = append(out, store.Entry{Subject: hookSubject(run.RunNo), TTL: keep,
			Value: HookJob{RunNo: run.RunNo, V: engine.EventVersion, Target: i, At: at}})
	}
	return out
}

// hookKeep is how long a webhook job stays in the log: the delivery
// window, in which it is retried, and an hour. Jobs are work items, no
// part of the billing history.
func (s *Service) hookKeep() time.Duration { return s.cfg.Webhooks.Window + time.Hour }

// DeliveryKept is how long a webhook delivery's record stays in the log
// (and in the deliveries list) after its last attempt. Each attempt's
// record replaces the one before (a rollup), so a delivery is one message.
const DeliveryKept = 30 * 24 * time.Hour

// RedeliverEvery is how often a run's webhook may be sent again: each
// redelivery posts to every target, so without a bound one call could be
// turned into any number of outbound requests.
const RedeliverEvery = time.Minute

// Delivery is the state of one run's webhook delivery (the log entry).
type Delivery struct {
	WebhookID  string    `json:"webhook_id"`
	RunNo      string    `json:"run_no"`
	Event      string    `json:"event"`
	URL        string    `json:"url"`
	Status     string    `json:"status"` // retrying | delivered | failed
	Attempts   int       `json:"attempts"`
	LastStatus int       `json:"last_status,omitempty"`
	LastError  string    `json:"last_error,omitempty"`
	NextAt     time.Time `json:"next_attempt_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func hookSubject(runNo string) string { return subjects.HookPrefix + runNo }
func deliverySubject(accountID, runNo string, target int) string {
	return subjects.WHDeliveryPrefix + accountID + "." + runNo + "." + strconv.Itoa(target)
}

// The rules a webhook URL can break: the FieldError.Code of each of
// CheckWebhookURL's refusals, for a surface to say in its own words.
const (
	URLNotHTTP     = "http_url"        // not an http(s) URL, or with credentials
	URLNoHost      = "host"            // no host ("http://:8080/", "http://./")
	URLTooLong     = "too_long"        // longer than MaxWebhookURL
	URLBadPort     = "port"            // a port outside 1–65535
	URLOddIPv4     = "ipv4_form"       // an IPv4 address not written a.b.c.d
	URLThisMachine = "this_machine"    // localhost
	URLPrivate     = "private_address" // a loopback, private or special-purpose address
)

// urlRefusal is a refusal of a webhook URL: the API's message, and the
// rule as data.
func urlRefusal(rule, format string, args ...any) error {
	e := engine.Errorf(engine.CodeInvalidRequest, format, args...)
	e.Fields = []engine.FieldError{{Field: "webhook_url", Code: rule, Message: e.Message}}
	return e
}

// MaxWebhookURL is the longest webhook_url, in bytes.
const MaxWebhookURL = 2000

// CheckWebhookURL refuses what a webhook_url may not be: another scheme,
// no host, and (unless private addresses are allowed) a loopback or
// private or special-purpose literal address (the sender's policy) or
// localhost. Each refusal names its rule (URLNotHTTP, …) in its Fields.
func (s *Service) CheckWebhookURL(raw string) error {
	if len(raw) > MaxWebhookURL {
		return urlRefusal(URLTooLong, "webhook_url must be at most %d bytes, not %d", MaxWebhookURL, len(raw))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return urlRefusal(URLNotHTTP, "webhook_url must be an http(s) URL without credentials")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return urlRefusal(URLBadPort, "webhook_url's port must be from 1 to 65535, not %q", p)
		}
	}
	host := strings.TrimSuffix(u.Hostname(), ".") // the root's dot names the same host
	if host == "" {                               // a dialer takes an empty host for this machine
		return urlRefusal(URLNoHost, "webhook_url must name a host")
	}
	if numericHost(host) {
		if _, err := netip.ParseAddr(host); err != nil {
			return urlRefusal(URLOddIPv4, "webhook_url's host %q is an IPv4 address written otherwise than as four decimal numbers (a.b.c.d), which resolvers read in different ways; write it a.b.c.d", host)
		}
	}
	if s.cfg.Webhooks.AllowPrivate {
		return nil
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return urlRefusal(URLThisMachine, "webhook_url must not point at this machine")
	}
	if ip, err := netip.ParseAddr(host); err == nil && s.cfg.Webhooks.Sender != nil && !s.cfg.Webhooks.Sender.Allowed(ip) {
		return urlRefusal(URLPrivate, "webhook_url must not point at a loopback, private or special-purpose address")
	}
	return nil
}

// numericHost says whether a URL's host is an IPv4 address as the WHATWG
// URL standard reads one: its last label is a number (decimal, or hex
// after 0x). Browsers and getaddrinfo read 2130706433, 0x7f000001 and
// 127.1 as 127.0.0.1, where Go's URL and IP parsers see a name; no name
// in the DNS ends in a number, so a host that does is an address.
func numericHost(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if len(last) >= 2 && (last[:2] == "0x" || last[:2] == "0X") {
		last = last[2:]
		return strings.Trim(last, "0123456789abcdefABCDEF") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// Sign is the Standard Webhooks signature of a delivery.
func Sign(secret, id string, ts int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%d.", id, ts)
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// Redeliver queues a run's terminal event for delivery again.
func (s *Service) Redeliver(ctx context.Context, accountID, runNo string) error {
	events, err := s.log.RunLog(ctx, runNo, 0)
	if err != nil {
		return internal("read run", err)
	}
	if len(events) == 0 || events[0].Event.Type != engine.RunCreated || events[0].Event.Created.AccountID != accountID {
		return engine.Errorf(engine.CodeRunNotFound, "no run %q", runNo)
	}
	run := engine.ApplyRun(engine.Run{}, events[0].Event, events[0].Seq)
	if len(run.WebhookTargets()) == 0 {
		return engine.Errorf(engine.CodeInvalidRequest, "run %s has no webhook_url and no account endpoint", runNo)
	}
	if !events[len(events)-1].Event.Type.Terminal() {
		return engine.Errorf(engine.CodeInvalidRequest, "run %s has not finished: its webhook is sent when it does", runNo)
	}
	// At most one sending of the run's webhook per RedeliverEvery: the
	// jobs are written with a compare-and-set on the run's last one, so
	// of concurrent calls one wins.
	var last HookJob
	lastSeq, err := s.log.Last(ctx, hookSubject(runNo), &last)
	if err != nil && !errors.Is(err, port.ErrNoMessage) {
		return internal("read webhook jobs", err)
	}
	now := s.now()
	if wait := last.At.Add(RedeliverEvery).Sub(now); !last.At.IsZero() && wait > 0 {
		return redeliverLimited(runNo, wait)
	}
	jobs := hookJobs(run, now, s.hookKeep())
	jobs[0].Expect = store.ExpectSeq(lastSeq)
	_, err = s.log.Append(ctx, jobs...)
	if errors.Is(err, port.ErrConflict) {
		return redeliverLimited(runNo, RedeliverEvery)
	}
	if err != nil {
		return internal("queue redelivery", err)
	}
	return nil
}

func redeliverLimited(runNo string, wait time.Duration) error {
	return &engine.Error{Code: engine.CodeRateLimited, RetryAfter: wait, Limit: engine.LimitWebhookRedelivery,
		Message: fmt.Sprintf("run %s's webhook was sent less than %s ago; it can be sent again in %s", runNo, RedeliverEvery, wait.Round(time.Second))}
}

// Deliveries lists an account's webhook deliveries, newest first.
func (s *Service) Deliveries(ctx context.Context, accountID string, limit int) ([]Delivery, error) {
	subjects, err := s.ports.Log.Subjects(ctx, subjects.WHDeliveryPrefix+accountID+".>")
	if err != nil {
		return nil, internal("list deliveries", err)
	}
	var out []Delivery
	for _, subj := range subjects {
		var d Delivery
		if _, err := s.log.Last(ctx, subj, &d); err == nil {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// dispatcher delivers hook jobs, on a worker pool.
type dispatcher struct {
	svc  *Service
	pool *worker.Pool
}

func startDispatcher(ctx context.Context, e *Service) (*dispatcher, error) {
	if e.cfg.Webhooks.Sender == nil {
		return nil, errors.New("Webhooks.Sender is required")
	}
	d := &dispatcher{svc: e}
	pool, err := worker.Start(ctx, e.ports.Queue, worker.Config{Spec: port.QueueSpec{Name: webhookConsumer,
		Filter: subjects.HookPrefix + "*", AckWait: 30 * time.Second, MaxPending: 256, Batch: 32}}, d.handle)
	if err != nil {
		return nil, err
	}
	d.pool = pool
	return d, nil
}

func (d *dispatcher) stop() {
	if d == nil {
		return
	}
	d.pool.Stop()
}

func (d *dispatcher) backoff(attempt int) time.Duration {
	b := d.svc.cfg.Webhooks.Backoff
	for i := 1; i < attempt && b < time.Hour; i++ {
		b *= 5
	}
	return min(b, time.Hour)
}

// handle makes one attempt at a delivery (20 s at most, within the
// queue's ack wait of 30 s).
func (d *dispatcher) handle(ctx context.Context, m port.QueueMsg) worker.Outcome {
	var job HookJob
	if err := json.Unmarshal(m.Data(), &job); err != nil || job.RunNo == "" {
		return worker.Drop()
	}
	attempt := int(m.Attempt())
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	events, err := d.svc.log.RunLog(ctx, job.RunNo, 0)
	if err != nil || len(events) == 0 {
		if err == nil { // purged after retention: nothing left to send
			return worker.Drop()
		}
		return worker.Retry(time.Second)
	}
	created, term := events[0], events[len(events)-1]
	targets := engine.ApplyRun(engine.Run{}, created.Event, created.Seq).WebhookTargets()
	if created.Event.Type != engine.RunCreated || !term.Event.Type.Terminal() || job.Target < 0 || job.Target >= len(targets) {
		return worker.Drop()
	}
	target := targets[job.Target]
	secret, err := d.svc.secretOf(ctx, created.Event.Created.AccountID)
	if err != nil {
		return worker.Retry(time.Second)
	}
	id := strconv.FormatUint(term.Seq, 10)
	body, _ := json.Marshal(map[string]any{"type": "run." + string(term.Event.Type), "timestamp": term.Event.At,
		"data": term.Event.PublicData()})
	status, derr := d.post(ctx, target, secret, id, body)
	state := Delivery{WebhookID: id, RunNo: job.RunNo, Event: string(term.Event.Type), URL: target,
		Attempts: attempt, LastStatus: status, UpdatedAt: d.svc.now()}
	switch {
	case derr == nil:
		state.Status = "delivered"
	case d.svc.now().Sub(term.Event.At) >= d.svc.cfg.Webhooks.Window:
		state.Status, state.LastError = "failed", derr.Error()
	default:
		state.Status, state.LastError = "retrying", derr.Error()
		state.NextAt = d.svc.now().Add(d.backoff(attempt))
	}
	if _, err := d.svc.log.Append(ctx, store.Entry{Subject: deliverySubject(created.Event.Created.AccountID, job.RunNo, job.Target), Value: state,
		Rollup: true, TTL: DeliveryKept}); err != nil {
		d.svc.cfg.Logger.Warn("recording a webhook delivery", "run_no", job.RunNo, "err", err)
	}
	switch state.Status {
	case "retrying":
		return worker.Retry(d.backoff(attempt))
	case "failed":
		return worker.Drop()
	}
	return worker.Done()
}

// post sends one delivery; an answer outside 2xx is a failure.
func (d *dispatcher) post(ctx context.Context, target, secret, id string, body []byte) (int, error) {
	ts := d.svc.now().Unix()
	sig, err := Sign(secret, id, ts, body)
	if err != nil {
		return 0, err
	}
	return d.svc.cfg.Webhooks.Sender.Send(ctx, target, map[string]string{
		"Content-Type": "application/json", "User-Agent": "apprun-webhooks",
		"webhook-id": id, "webhook-timestamp": strconv.FormatInt(ts, 10), "webhook-signature": sig,
	}, body)
}
