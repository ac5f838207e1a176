package httpapi

import (
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the node's Prometheus metrics: requests by route and
// status, open event streams, and the domain's counters and read models,
// collected when scraped. Labels are route templates and statuses only:
// no account, key or run appears in them.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.HistogramVec
	streams  prometheus.Gauge

	mu        sync.RWMutex
	observers map[observerKey]prometheus.Observer // requests' children, by labels
	// answered sees every answer's status and the key that asked (the
	// refusal budgets, refusals.go).
	answered func(r *http.Request, status int, keyID string)
}

// observerKey is one child of requests: its labels, the code as a number.
type observerKey struct {
	route, method string
	code          int
}

func newMetrics(a *API) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apprun_http_request_duration_seconds",
			Help:    "HTTP requests by route template, method and status code (an event stream on HTTP/1.1: the time to open it; on HTTP/2: to its end).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method", "code"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "apprun_sse_clients", Help: "Event streams open on this node."}),
		observers: map[observerKey]prometheus.Observer{},
	}
	m.registry.MustRegister(m.requests, m.streams, domainCollector{a},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe is the middleware that times every request, named by routeOf,
// and hands its status to answered: the one place every surface's answer
// passes (the API's routes, the website's pages, MCP).
func (m *metrics) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		m.observer(routeOf(r), methodLabel(r.Method), sw.status).Observe(time.Since(start).Seconds())
		if m.answered != nil {
			m.answered(r, sw.status, sw.keyID)
		}
	})
}

// Metered counts the requests of a surface beside the API in the request
// histogram: the website (as its router's middleware: Site.Use) and MCP.
func (a *API) Metered(next http.Handler) http.Handler { return a.metrics.observe(next) }

// methodLabel is a request's method as a label: the client chooses it,
// and a route that takes any method (the profiles') would otherwise give
// every made-up method a series of its own.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

// observer returns requests' child for a route, method and status code,
// found once by its labels and then kept: WithLabelValues validates,
// hashes and formats the labels on every call, about 6 % of a cached run's
// GET (BenchmarkGetRunHandler's profile). The labels are few (route
// templates, the standard methods and "other", codes), so the map stays
// small.
func (m *metrics) observer(route, method string, code int) prometheus.Observer {
	k := observerKey{route, method, code}
	m.mu.RLock()
	o, ok := m.observers[k]
	m.mu.RUnlock()
	if ok {
		return o
	}
	o = m.requests.WithLabelValues(route, method, strconv.Itoa(code))
	m.mu.Lock()
	m.observers[k] = o
	m.mu.Unlock()
	return o
}

// statusWriter remembers the status code; Unwrap keeps Flush and
// deadlines reachable through http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	// keyID is the key (or website session) the request authenticated
	// as, set by the key check (known): its refusals count against it.
	keyID string
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

var (
	descRuns     = prometheus.NewDesc("apprun_runs", "Runs in the read model by status.", []string{"status"}, nil)
	descActive   = prometheus.NewDesc("apprun_active_runs", "Runs queued or running, all accounts.", nil, nil)
	descEvents   = prometheus.NewDesc("apprun_events_appended_total", "Messages this node stored in the event log.", nil, nil)
	descCharges  = prometheus.NewDesc("apprun_ledger_charges_total", "Runs this node charged at admission.", nil, nil)
	descSettles  = prometheus.NewDesc("apprun_ledger_settles_total", "Charges consumed by runs this node completed.", nil, nil)
	descRefunds  = prometheus.NewDesc("apprun_ledger_refunds_total", "Charges refunded for runs that failed on this node.", nil, nil)
	descCharged  = prometheus.NewDesc("apprun_ledger_credits_charged_total", "Credits this node charged.", nil, nil)
	descRefunded = prometheus.NewDesc("apprun_ledger_credits_refunded_total", "Credits this node refunded.", nil, nil)
	descBusy     = prometheus.NewDesc("apprun_workers_busy", "This node's workers executing a run now.", nil, nil)
	descWorkers  = prometheus.NewDesc("apprun_workers", "This node's workers: how many runs it executes at once.", nil, nil)
	descApplied  = prometheus.NewDesc("apprun_read_models_applied_seq", "The log sequence through which this node's read models applied the log.", nil, nil)
)

// domainCollector reads the engine's counters and the read models' run
// counts at scrape time.
type domainCollector struct{ a *API }

func (domainCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRuns, descActive, descEvents, descCharges, descSettles, descRefunds, descCharged, descRefunded, descBusy, descWorkers, descApplied} {
		ch <- d
	}
}

func (c domainCollector) Collect(ch chan<- prometheus.Metric) {
	if counts, err := c.a.cfg.Reads.RunsByStatus(); err == nil {
		for _, st := range []engine.Status{engine.StatusQueued, engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed} {
			ch <- prometheus.MustNewConstMetric(descRuns, prometheus.GaugeValue, float64(counts[st]), string(st))
		}
		ch <- prometheus.MustNewConstMetric(descActive, prometheus.GaugeValue, float64(counts[engine.StatusQueued]+counts[engine.StatusRunning]))
	}
	s := c.a.cfg.Engine.Stats()
	for _, v := range []struct {
		d *prometheus.Desc
		n uint64
	}{{descEvents, s.EventsAppended}, {descCharges, s.Charges}, {descSettles, s.Settles}, {descRefunds, s.Refunds},
		{descCharged, s.CreditsCharged}, {descRefunded, s.CreditsRefunded}} {
		ch <- prometheus.MustNewConstMetric(v.d, prometheus.CounterValue, float64(v.n))
	}
	ch <- prometheus.MustNewConstMetric(descBusy, prometheus.GaugeValue, float64(s.WorkersBusy))
	ch <- prometheus.MustNewConstMetric(descWorkers, prometheus.GaugeValue, float64(s.Workers))
	// A sequence, not a lag: the log's head is the stream's, which a
	// scrape should not have to ask the log for; a watcher subtracts.
	ch <- prometheus.MustNewConstMetric(descApplied, prometheus.GaugeValue, float64(c.a.cfg.Reads.Applied()))
}

// routeOperability registers GET /metrics (open, like /healthz: aggregate
// numbers only) and /debug/pprof/ (the admin token only).
func (a *API) routeOperability() {
	a.router.Handle("/metrics", promhttp.HandlerFor(a.metrics.registry, promhttp.HandlerOpts{})).Methods(http.MethodGet)
	p := a.router.PathPrefix("/debug/pprof").Subrouter()
	p.HandleFunc("/cmdline", a.admin(pprof.Cmdline))
	p.HandleFunc("/profile", a.admin(pprof.Profile))
	p.HandleFunc("/symbol", a.admin(pprof.Symbol))
	p.HandleFunc("/trace", a.admin(pprof.Trace))
	p.PathPrefix("/").HandlerFunc(a.admin(pprof.Index))
}

// IsProfile says whether r asks for a profile (net/http/pprof).
func IsProfile(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/debug/pprof") }
