package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The soak's load: modest and steady, since what it shows is whether the
// nodes stay flat over time, not how fast they go (the other scenarios
// measure that). Each node gets its share; what a killed node does not
// answer is counted and sent again to another.
const (
	soakCreators    = 3
	soakCreateEvery = time.Second // per creator: about 3 creates a second
	soakReaders     = 2
	soakReadEvery   = 100 * time.Millisecond // per reader: about 20 reads a second
	soakMaxStreams  = 64                     // streams followed at once
	soakAccounts    = 6
	soakCredits     = 1_000_000 // each account's opening grant
)

// runKind is a kind of run in the soak's mix.
type runKind int

const (
	shortRun    runKind = iota // sleeps up to 2 s and completes
	streamedRun                // ticks for 3 s, followed on its stream to its end
	heldRun                    // ticks for 30 s, its stream held all along
	longRun                    // ticks as long as a run may be, its stream held across kills
	failingRun                 // fails after 0.5 s (input.fail): refunded
	canceledRun                // sleeps a minute, canceled through the API after 1–3 s: refunded
	runKinds
)

var runKindNames = [runKinds]string{"short", "streamed", "held 30 s", "held long", "failing", "canceled"}

// soakMix is the kinds of 20 creates in a row: half short ones; every
// hundredth create is a long run instead.
var soakMix = [20]runKind{shortRun, streamedRun, shortRun, failingRun, shortRun, canceledRun, shortRun, heldRun, shortRun, streamedRun,
	shortRun, failingRun, shortRun, streamedRun, shortRun, canceledRun, shortRun, heldRun, shortRun, shortRun}

// soakLoad is the clients: creators, readers, and the stream followers
// and cancellers the creators start.
type soakLoad struct {
	nodes *soakNodes
	keys  []string
	// end is the load's end: no run is made to outlive it. longest is
	// the longest run it makes (half the time between two kills).
	end     time.Time
	longest time.Duration
	errs    tally
	n       atomic.Int64
	made    [runKinds]atomic.Int64
	reads   atomic.Int64
	canc    atomic.Int64
	recent  recentRuns
	// followed counts the streams that saw their run's end; open those
	// still following, each one's state in following (by run); bg waits
	// for them and the cancellers.
	followed, open atomic.Int64
	following      sync.Map // run number → *followState
	bg             sync.WaitGroup
	streamSlots    chan struct{}
	streamClient   *http.Client
}

// followState is where a stream follower is: which node it reads, the
// last event it saw, and when it saw anything last (unix nanoseconds).
type followState struct {
	node     atomic.Int32
	last     atomic.Uint64
	at       atomic.Int64
	attempts atomic.Int32
}

func newSoakLoad(nodes *soakNodes, keys []string, end time.Time, longest time.Duration) *soakLoad {
	return &soakLoad{nodes: nodes, keys: keys, end: end, longest: longest, streamSlots: make(chan struct{}, soakMaxStreams),
		streamClient: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
}

// run drives the creators and readers until ctx ends. The followers and
// cancellers they start keep going on bg, under bgCtx.
func (l *soakLoad) run(ctx, bgCtx context.Context) {
	var wg sync.WaitGroup
	for range soakCreators {
		wg.Go(func() { l.creator(ctx, bgCtx) })
	}
	for range soakReaders {
		wg.Go(func() { l.reader(ctx) })
	}
	wg.Wait()
}

func (l *soakLoad) creator(ctx, bgCtx context.Context) {
	tick := time.NewTicker(soakCreateEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n := l.n.Add(1)
		kind := soakMix[n%int64(len(soakMix))]
		if n%100 == 99 {
			kind = longRun
		}
		key := l.keys[n%int64(len(l.keys))]
		// A create in flight at the load's end still completes (bgCtx).
		runNo, node, err := l.create(bgCtx, int(n), key, l.body(kind))
		if err != nil {
			continue // counted by create
		}
		l.made[kind].Add(1)
		l.recent.add(soakRun{runNo: runNo, key: key})
		switch kind {
		case streamedRun, heldRun, longRun, failingRun:
			select {
			case l.streamSlots <- struct{}{}:
				l.open.Add(1)
				l.bg.Go(func() {
					defer func() { <-l.streamSlots; l.open.Add(-1) }()
					l.follow(bgCtx, key, runNo, node+1) // another node than its create's
				})
			default: // enough streams open
			}
		case canceledRun:
			l.bg.Go(func() { l.cancel(bgCtx, key, runNo, node+2) })
		}
	}
}

// body is a create's body for kind. Its sleep is cut to the load's end
// and to the longest run: a run whose node is killed starts again from
// the start on another (test-sleep sleeps again, after the executor's
// ack wait), so a run no longer than half the time between two kills is
// interrupted at most once, and is over soon after the load's end.
func (l *soakLoad) body(kind runKind) map[string]any {
	left := int(min(time.Until(l.end), l.longest).Milliseconds())
	upTo := func(ms int) int { return max(100, min(ms, left)) }
	switch kind {
	case streamedRun:
		return sleepRun(upTo(3000), 6)
	case heldRun:
		return sleepRun(upTo(30_000), 30)
	case longRun:
		ms := upTo(300_000)
		return sleepRun(ms, max(1, ms/5000))
	case failingRun:
		return map[string]any{"app_slug": "test-sleep", "input": map[string]any{"ms": 500, "fail": true}}
	case canceledRun:
		return sleepRun(upTo(60_000), 0)
	}
	return sleepRun(upTo(200+rand.IntN(1800)), 0)
}

// create creates a run on node n (or the next one up), sending it again
// with the same Idempotency-Key to the next node while the answer is
// none or says the node cannot serve now (one run whatever happens, and
// a node killed mid-create leaves no doubt), for up to a minute.
func (l *soakLoad) create(ctx context.Context, n int, key string, body any) (string, int, error) {
	hdr := http.Header{"Idempotency-Key": {randomHex(12)}}
	give := time.Now().Add(time.Minute)
	for attempt := 0; ; attempt++ {
		node, srv := l.nodes.pick(n + attempt)
		rctx, cancel := context.WithTimeout(ctx, 40*time.Second) // past the server's 30 s deadline
		st, data, err := srv.doWith(rctx, "POST", "/api/v1/runs", key, hdr, body)
		cancel()
		if err == nil && st == 201 {
			var r struct {
				RunNo string `json:"run_no"`
			}
			return r.RunNo, node, json.Unmarshal(data, &r)
		}
		kind := l.errs.add("create", st, err, data)
		if !retryable(st, err) || time.Now().After(give) || ctx.Err() != nil {
			return "", node, errors.New(kind)
		}
		pause(ctx, backoff(attempt))
	}
}

// follow reads a run's event stream to its terminal event, resuming
// after the last event seen (Last-Event-ID) on the next node when a
// stream breaks: a killed node's streams resume elsewhere.
func (l *soakLoad) follow(ctx context.Context, key, runNo string, node int) {
	st := &followState{}
	st.at.Store(time.Now().UnixNano())
	l.following.Store(runNo, st)
	defer l.following.Delete(runNo)
	var last uint64
	for attempt := 0; ctx.Err() == nil; attempt++ {
		i, srv := l.nodes.pick(node + attempt)
		st.node.Store(int32(i))
		st.attempts.Store(int32(attempt + 1))
		done := false
		err := srv.stream(ctx, l.streamClient, key, runNo, last, func() { st.at.Store(time.Now().UnixNano()) }, func(ev event) bool {
			last = ev.ID
			st.last.Store(last)
			st.at.Store(time.Now().UnixNano())
			done = terminal(ev.Type)
			return !done
		})
		if done {
			l.followed.Add(1)
			return
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errStreamCut
		}
		l.errs.add("stream", 0, err, nil)
		pause(ctx, backoff(attempt))
	}
}

// stillFollowing describes the streams still open, at most ten: the
// run, its status as the API lists it, the node, the last event seen and
// how long ago anything came.
func (l *soakLoad) stillFollowing(status map[string]string) []string {
	var out []string
	l.following.Range(func(k, v any) bool {
		st := v.(*followState)
		out = append(out, fmt.Sprintf("%s (%s): on %s after %d connections, last event id %d, nothing for %s",
			k, status[k.(string)], nodeName(int(st.node.Load())), st.attempts.Load(), st.last.Load(),
			time.Since(time.Unix(0, st.at.Load())).Round(time.Second)))
		return len(out) < 10
	})
	return out
}

// errStreamCut is a stream that ended before its run's terminal event:
// its node was killed.
var errStreamCut = errors.New("the stream ended before the run did")

// cancel cancels a run after 1 to 3 s, on another node than its
// create's, sending the cancel again while no node answers it.
func (l *soakLoad) cancel(ctx context.Context, key, runNo string, node int) {
	pause(ctx, time.Second+rand.N(2*time.Second))
	give := time.Now().Add(time.Minute)
	for attempt := 0; ctx.Err() == nil; attempt++ {
		_, srv := l.nodes.pick(node + attempt)
		rctx, cancel := context.WithTimeout(ctx, 40*time.Second)
		st, data, err := srv.do(rctx, "POST", "/api/v1/runs/"+runNo+"/cancel", key, nil)
		cancel()
		if err == nil && st == 200 {
			l.canc.Add(1)
			return
		}
		l.errs.add("cancel", st, err, data)
		if st == 409 || !retryable(st, err) || time.Now().After(give) { // 409: it ended first
			return
		}
		pause(ctx, backoff(attempt))
	}
}

// reader reads a recent run (one read in ten: its account) from a node
// taken at random: a read is not retried, only counted.
func (l *soakLoad) reader(ctx context.Context) {
	tick := time.NewTicker(soakReadEvery)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r, ok := l.recent.pick()
		if !ok {
			continue
		}
		path := "/api/v1/runs/" + r.runNo
		if i%10 == 0 {
			path = "/api/v1/account"
		}
		_, srv := l.nodes.pick(rand.IntN(clusterNodes))
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		st, data, err := srv.do(rctx, "GET", path, r.key, nil)
		cancel()
		if err == nil && st == 200 {
			l.reads.Add(1)
		} else if ctx.Err() == nil {
			l.errs.add("read", st, err, data)
		}
	}
}

// mix says how many runs of each kind were created.
func (l *soakLoad) mix() string {
	s := ""
	for k := range runKinds {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", runKindNames[k], l.made[k].Load())
	}
	return s
}

func backoff(attempt int) time.Duration {
	return min(2*time.Second, 250*time.Millisecond<<min(attempt, 4))
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// soakRun is a run the soak created, and its account's key.
type soakRun struct{ runNo, key string }

// recentRuns keeps the last runs created, for the readers.
type recentRuns struct {
	mu   sync.Mutex
	runs []soakRun
	next int
}

func (r *recentRuns) add(run soakRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.runs) < 1000 {
		r.runs = append(r.runs, run)
		return
	}
	r.runs[r.next] = run
	r.next = (r.next + 1) % len(r.runs)
}

func (r *recentRuns) pick() (soakRun, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.runs) == 0 {
		return soakRun{}, false
	}
	return r.runs[rand.IntN(len(r.runs))], true
}
