package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// StreamClients is one client process of the cluster-stream scenario
// (`apprun bench stream-clients`, a child of the bench started from its
// own binary). The bench, like every process here, may hold at most
// 20,000 descriptors, so 50,000 streams need client processes of their
// own; each holds its share of streams to one node.
//
// It speaks JSON lines: it reads its clientJob from the first line of
// in, opens the streams and writes a clientOpened line to out; then
// "measure <unix nanos>" starts counting the delivery of events appended
// after that instant, and "report" stops it and writes a clientReport
// line. The end of in closes every stream and returns. Progress goes to
// log. The job comes on stdin rather than in flags so that the API key
// stays out of the process list.
func StreamClients(ctx context.Context, in io.Reader, out, log io.Writer) error {
	cmds := bufio.NewScanner(in)
	if !cmds.Scan() {
		return fmt.Errorf("stream-clients: no job on stdin: %v", cmds.Err())
	}
	var job clientJob
	if err := json.Unmarshal(cmds.Bytes(), &job); err != nil {
		return fmt.Errorf("stream-clients: job: %w", err)
	}
	if job.Streams <= 0 || len(job.Runs) == 0 || job.Host == "" {
		return fmt.Errorf("stream-clients: a job needs a host (%q), runs (%d) and streams (%d)", job.Host, len(job.Runs), job.Streams)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	c := newClientSet(job, log)
	enc := json.NewEncoder(out)
	if err := enc.Encode(c.open(ctx)); err != nil {
		return err
	}
	for cmds.Scan() {
		word, arg, _ := strings.Cut(cmds.Text(), " ")
		switch word {
		case "measure":
			since, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				return fmt.Errorf("stream-clients: measure %q: %w", arg, err)
			}
			c.measure(since)
		case "report":
			if err := enc.Encode(c.report()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("stream-clients: unknown command %q", cmds.Text())
		}
	}
	stop()
	c.done.Wait()
	return cmds.Err()
}

// clientJob is what one client process holds: Streams streams to Host,
// stream i following Runs[(First+i) % len(Runs)], dialled from Source
// when set; at most InFlight being opened at once and Rate a second,
// none started after OpenWithin. Node is the server name of the node at
// Host: events whose run ticks on another node are counted apart, to show
// delivery across nodes.
type clientJob struct {
	Host       string        `json:"host"`
	Key        string        `json:"key"`
	Node       string        `json:"node"`
	Runs       []string      `json:"runs"`
	First      int           `json:"first"`
	Streams    int           `json:"streams"`
	InFlight   int           `json:"in_flight"`
	Rate       int           `json:"rate"`
	OpenWithin time.Duration `json:"open_within"`
	Source     string        `json:"source,omitempty"`
}

// clientRetry is how long a cut stream waits before it resumes: the
// retry hint apprun opens every stream with (3 s), which EventSource
// follows, and up to a second more so that cut streams do not all come
// back at once.
const clientRetry = 3 * time.Second

// clientOpened is a client process's answer once every stream it started
// is open (its first event arrived) or failed, or OpenWithin passed.
type clientOpened struct {
	Started  int     `json:"started"`
	Opened   int     `json:"opened"`
	Failed   int     `json:"failed"`
	FirstErr string  `json:"first_error,omitempty"`
	Cuts     int     `json:"cuts"`
	FirstCut string  `json:"first_cut,omitempty"`
	Seconds  float64 `json:"seconds"`
}

// clientReport is what a client process measured: its streams open now,
// those that failed for good, the cuts while measured (each stream cut
// resumes with Last-Event-ID, as EventSource does), and every delivery
// while measured (receipt minus the event's own time, in microseconds:
// the raw samples, so that the percentiles over all processes are exact).
type clientReport struct {
	Open     int     `json:"open"`
	Failed   int     `json:"failed"`
	FirstErr string  `json:"first_error,omitempty"`
	Cuts     int     `json:"cuts"`
	FirstCut string  `json:"first_cut,omitempty"`
	Events   int     `json:"events"`
	Remote   int     `json:"remote"` // of Events, ticked on another node
	Micros   []int64 `json:"latency_us"`
}

// clientSet is one process's streams and what they measured.
type clientSet struct {
	job    clientJob
	log    io.Writer
	dialer *net.Dialer
	// measuring: deliveries of events appended after since (unix nanos)
	// are counted, and cuts.
	measuring atomic.Bool
	since     atomic.Int64
	held      atomic.Int64 // streams connected and past their replay now
	opened    atomic.Int64 // streams that were once
	failed    atomic.Int64 // streams refused or ended for good
	firstErr  firstError
	cuts      atomic.Int64
	firstCut  firstError
	remote    atomic.Int64
	mu        sync.Mutex
	micros    []int64
	done      sync.WaitGroup
}

func newClientSet(job clientJob, log io.Writer) *clientSet {
	c := &clientSet{job: job, log: log, dialer: &net.Dialer{}}
	if job.Source != "" {
		c.dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(job.Source)}
	}
	return c
}

// open starts the job's streams, paced, and returns once each is open or
// failed, or OpenWithin passed. They stay open until ctx ends.
func (c *clientSet) open(ctx context.Context) clientOpened {
	start := time.Now()
	deadline := start.Add(c.job.OpenWithin)
	gate := make(chan struct{}, max(1, c.job.InFlight))
	var pace *time.Ticker
	if c.job.Rate > 0 {
		pace = time.NewTicker(time.Second / time.Duration(c.job.Rate))
		defer pace.Stop()
	}
	// Progress on the log, which the bench shows.
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	var tried sync.WaitGroup
	started := 0
	for ; started < c.job.Streams && time.Now().Before(deadline); started++ {
		select {
		case <-progress.C:
			fmt.Fprintf(c.log, "stream-clients %s: %d started, %d open, %d failed, %d cuts after %s\n",
				c.job.Host, started, c.held.Load(), c.failed.Load(), c.cuts.Load(), time.Since(start).Round(time.Millisecond))
		default:
		}
		if pace != nil {
			<-pace.C
		}
		gate <- struct{}{}
		tried.Add(1)
		c.done.Add(1)
		go c.follow(ctx, c.job.Runs[(c.job.First+started)%len(c.job.Runs)], sync.OnceFunc(func() { <-gate; tried.Done() }))
	}
	all := make(chan struct{})
	go func() { tried.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(time.Until(deadline)):
	}
	r := clientOpened{Started: started, Opened: int(c.opened.Load()), Failed: int(c.failed.Load()),
		Cuts: int(c.cuts.Load()), Seconds: time.Since(start).Seconds()}
	r.FirstErr, r.FirstCut = c.firstErr.get(), c.firstCut.get()
	return r
}

// follow holds one stream until ctx ends, resuming it after a cut with
// Last-Event-ID; opened is called once, when its first event arrived or
// it failed for good. Not at its headers: a node answers them before it
// reads the run's log for the replay, so a gate released there would not
// bound the replays a node has in hand, and they would queue until they
// time out.
func (c *clientSet) follow(ctx context.Context, runNo string, opened func()) {
	defer c.done.Done()
	defer opened()
	var last uint64
	for {
		connected := false
		err := rawStreamAt(ctx, c.dialer, c.job.Host, c.job.Key, runNo, last, nil, func(ev event) bool {
			if !connected {
				connected = true
				c.held.Add(1)
				if last == 0 {
					c.opened.Add(1)
					opened()
				}
			}
			last = max(last, ev.ID)
			return c.event(ev)
		})
		if connected {
			c.held.Add(-1)
		}
		if ctx.Err() != nil {
			return
		}
		var refused *rawStatusError
		if err == nil || errors.As(err, &refused) {
			// Refused, or ended cleanly (its run ended: it outlives the
			// scenario, so something is wrong): EventSource stops too.
			if err == nil {
				err = errors.New("the stream ended while its run ticks")
			}
			c.failed.Add(1)
			c.firstErr.note(err)
			return
		}
		c.cuts.Add(1)
		c.firstCut.note(err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(clientRetry + rand.N(time.Second)):
		}
	}
}

// event counts one event's delivery while measuring.
func (c *clientSet) event(ev event) bool {
	if !c.measuring.Load() {
		return true
	}
	at, ok := eventTime(ev.Data)
	if !ok || at.UnixNano() <= c.since.Load() {
		return true
	}
	d := time.Since(at)
	if n := tickNode(ev.Data); n != "" && n != c.job.Node {
		c.remote.Add(1)
	}
	c.mu.Lock()
	c.micros = append(c.micros, d.Microseconds())
	c.mu.Unlock()
	return true
}

// measure starts counting deliveries of the events appended after since,
// and the cuts from now on.
func (c *clientSet) measure(since int64) {
	c.since.Store(since)
	c.cuts.Store(0)
	c.firstCut.reset()
	c.measuring.Store(true)
}

// report stops measuring and says what was measured.
func (c *clientSet) report() clientReport {
	c.measuring.Store(false)
	c.mu.Lock()
	micros := c.micros
	c.micros = nil
	c.mu.Unlock()
	r := clientReport{Open: int(c.held.Load()), Failed: int(c.failed.Load()), Cuts: int(c.cuts.Load()),
		Events: len(micros), Remote: int(c.remote.Swap(0)), Micros: micros}
	r.FirstErr, r.FirstCut = c.firstErr.get(), c.firstCut.get()
	return r
}

// tickNode is the node a test-sleep tick says it ran on ("tick on
// <node>"), or "" for another event.
func tickNode(data string) string {
	const on = "tick on "
	i := strings.Index(data, on)
	if i < 0 {
		return ""
	}
	rest := data[i+len(on):]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// firstError keeps the first of many errors.
type firstError struct {
	mu  sync.Mutex
	err string
}

func (f *firstError) note(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == "" {
		f.err = err.Error()
	}
}

func (f *firstError) get() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *firstError) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = ""
}
