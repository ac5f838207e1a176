package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apprun/apprun/llm/llmtest"
)

// Scenario canceled: attackers create runs of an App that reads a page
// built to be slow to parse and cancel each soon after (a cancel refunds
// the run and frees its place, so this costs them nothing), while a
// victim account creates a run every few seconds and times it.

type canceledOptions struct {
	runs, accounts, credits, lanes  int
	cancelAfter, victimEvery, quiet time.Duration
}

func (o canceledOptions) validate() error {
	err := errors.Join(positive("runs", o.runs), positive("accounts", o.accounts), positive("credits", o.credits),
		positive("lanes", o.lanes), positive("cancel-after", o.cancelAfter), positive("victim-every", o.victimEvery))
	if o.quiet < 0 {
		err = errors.Join(err, fmt.Errorf("-quiet must not be negative"))
	}
	return err
}

// victimLimit is the bound on the victim's run, create to end.
const victimLimit = 2 * time.Second

// seoMarker is in meta-tags-from-page's instructions to the model: the
// fake model answers that App slowly (so its runs are still going when
// canceled) and every other at once.
const seoMarker = "You are a technical SEO"

func runCanceled(ctx context.Context, o options) ([]*Report, error) {
	co := o.canceled
	rep := newReport("canceled", fmt.Sprintf("%d canceled runs on a slow page: the node's RSS ends within 100 MiB of its start, "+
		"and another account's run completes in under 2 s throughout", co.runs))
	page := slowPage()
	var fetches atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/page" {
			http.NotFound(w, r)
			return
		}
		fetches.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	defer web.Close()
	fake := llmtest.New()
	defer fake.Close()
	fake.Answer = fakeModel
	n, err := startNode(ctx, o.bin, map[string]string{
		"OPENAI_BASE_URL": fake.BaseURL(), "OPENAI_API_KEY": "sk-fake", "APPRUN_LLM_MODEL": "fake-model",
		"APPRUN_SOURCES_ALLOW_PRIVATE": "1",
	})
	if err != nil {
		return nil, err
	}
	rep.NodeEnv = n.Env
	err = attackCanceled(ctx, n, co, rep, web.URL+"/page", &fetches, fake)
	n.Close(err != nil || o.keepLog)
	return []*Report{rep}, err
}

func attackCanceled(ctx context.Context, n *Node, co canceledOptions, rep *Report, pageURL string, fetches *atomic.Int64, fake *llmtest.Server) error {
	c := newClient(n.URL, 30*time.Second)
	keys := make([]string, co.accounts)
	for i := range keys {
		var err error
		if _, keys[i], err = c.openAccount(ctx, n.AdminToken, fmt.Sprintf("attacker%d@example.com", i+1), co.credits); err != nil {
			return err
		}
	}
	// The victim is the demo account, with its key and three more: creates
	// and reads are limited per key (10 and 120 a minute), and the victim's
	// own pace must not be what it meets.
	demo, err := c.account(ctx, n.APIKey)
	if err != nil {
		return err
	}
	victimKeys := []string{n.APIKey}
	for range 3 {
		k, err := c.addKey(ctx, n.AdminToken, demo.ID)
		if err != nil {
			return err
		}
		victimKeys = append(victimKeys, k)
	}

	rssStart, err := n.RSS()
	if err != nil {
		return err
	}
	cpuStart, _ := n.CPU()
	samp := startSampler(n, 100*time.Millisecond)
	progress("canceled: %d runs over %d attacker accounts, each canceled %s after its create; the victim creates a run every %s",
		co.runs, co.accounts, co.cancelAfter, co.victimEvery)

	v := startVictim(ctx, c, victimKeys, co.victimEvery)
	attackStart := time.Now()
	tally := attack(ctx, c, keys, co, pageURL)
	attackTime := time.Since(attackStart)
	cpuAttack, _ := n.CPU()
	progress("canceled: attack done in %s; %s of quiet", attackTime.Round(time.Millisecond), co.quiet)
	select {
	case <-time.After(co.quiet):
	case <-ctx.Done():
	}
	runs := v.stop()
	cpuEnd, _ := n.CPU()
	rssEnd, err := n.RSS()
	if err != nil {
		return err
	}
	rssPeak, _ := samp.Stop()
	if err := ctx.Err(); err != nil {
		return err
	}

	rep.add("node RSS at start", mib(rssStart), "MiB")
	rep.add("node RSS peak", mib(rssPeak), "MiB")
	rep.check(fmt.Sprintf("node RSS at the end (+%s quiet)", co.quiet), mib(rssEnd), "MiB",
		fmt.Sprintf("within 100 MiB of start (%+.1f)", mib(rssEnd-rssStart)), rssEnd-rssStart < 100<<20)
	rep.add("node CPU during the attack", cpuAttack-cpuStart, "s")
	rep.add("node CPU during the quiet", cpuEnd-cpuAttack, "s")
	rep.add("attack duration", attackTime.Seconds(), "s")
	rep.add("attacker creates", counts(tally.creates), "")
	rep.add("attacker creates answered 429, waited Retry-After", tally.waited, "")
	rep.add("attacker cancels", counts(tally.cancels), "")
	rep.add("slow page fetches by the node", int(fetches.Load()), "")
	rep.add("meta-tags model calls begun", countCalls(fake, true), "")

	v.report(rep, runs)

	for i, k := range keys {
		a, err := c.account(ctx, k)
		if err != nil {
			return fmt.Errorf("attacker %d: %w", i+1, err)
		}
		rep.check(fmt.Sprintf("attacker %d balance (active runs %d)", i+1, a.ActiveRuns), a.Balance, "Credits",
			fmt.Sprintf("%d, all refunded", co.credits), a.Balance == int64(co.credits) && a.ActiveRuns == 0)
	}
	rep.note("the victim (the demo account) created a run every %s from the attack's start to the quiet's end and polled each "+
		"every 50 ms, with its key and 3 more of its account's keys in turn (creates and reads are limited per key)", co.victimEvery)
	for _, e := range tally.errs {
		rep.note("attacker: %s", e)
	}
	return nil
}

// slowPage is a page built to be slow to parse: 500 nested <div>s, then
// <p>s up to 2 MiB (cmd/apprun/cancel_work_test.go's).
func slowPage() string {
	var b strings.Builder
	b.WriteString("<html><head><title>slow</title></head><body>")
	b.WriteString(strings.Repeat("<div>", 500))
	for b.Len() < 2<<20-32 {
		b.WriteString("<p>x</p>")
	}
	return b.String()
}

// fakeModel answers meta-tags-from-page in a minute (600 chunks 100 ms
// apart, stopped when the node hangs up) and any other App, the victim's
// cold-email-writer, at once.
func fakeModel(r llmtest.Received) llmtest.Reply {
	if strings.Contains(r.System(), seoMarker) {
		return llmtest.Reply{Text: metaTagsReply, Chunks: 600, ChunkDelay: 100 * time.Millisecond}
	}
	return llmtest.Reply{Text: coldEmailReply}
}

func countCalls(fake *llmtest.Server, seo bool) int {
	n := 0
	for _, r := range fake.Received() {
		if strings.Contains(r.System(), seoMarker) == seo {
			n++
		}
	}
	return n
}

const metaTagsReply = `{"title_options":["Slow page | Example","Slow page","Example slow page"],` +
	`"meta_description_options":["A page built to be slow to parse.","Nested divs and many paragraphs."],` +
	`"og_title":"Slow page","og_description":"A page built to be slow to parse.","html":"<title>Slow page | Example</title>","notes":[]}`

const coldEmailReply = `{"emails":[` +
	`{"touch":1,"send_day":0,"angle":"opener","subject":"month-end at your agency","body":"Hi {{first_name}}, an opener."},` +
	`{"touch":2,"send_day":4,"angle":"proof","subject":"one day, not five","body":"Proof."},` +
	`{"touch":3,"send_day":9,"angle":"breakup","subject":"closing the loop","body":"Close."}]}`

// attackTally is what the attackers' requests were answered.
type attackTally struct {
	mu      sync.Mutex
	creates map[string]int // final answer to each run's create
	cancels map[string]int
	waited  int // 429s waited out
	errs    []string
}

func (t *attackTally) count(m map[string]int, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m[key]++
}

// attack spreads co.runs over the accounts' keys, round robin; each
// account has co.lanes runs going at once, each created, left running for
// co.cancelAfter, then canceled.
func attack(ctx context.Context, c *client, keys []string, co canceledOptions, pageURL string) *attackTally {
	t := &attackTally{creates: map[string]int{}, cancels: map[string]int{}}
	queues := make([]chan int, len(keys))
	for i := range queues {
		queues[i] = make(chan int, co.runs)
	}
	for i := range co.runs {
		queues[i%len(keys)] <- i
	}
	body := map[string]any{"app_slug": "meta-tags-from-page", "input": map[string]any{"page_url": pageURL}}
	var wg sync.WaitGroup
	for a, q := range queues {
		close(q)
		for range co.lanes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range q {
					if ctx.Err() != nil {
						return
					}
					attackOne(ctx, c, t, a, keys[a], body, co.cancelAfter)
				}
			}()
		}
	}
	wg.Wait()
	return t
}

func attackOne(ctx context.Context, c *client, t *attackTally, account int, key string, body map[string]any, cancelAfter time.Duration) {
	var r resp
	for {
		var err error
		r, err = c.do(ctx, "POST", "/api/v1/runs", key, body, nil)
		if err != nil {
			t.count(t.creates, "error")
			t.mu.Lock()
			t.errs = append(t.errs, fmt.Sprintf("account %d: create: %v", account+1, err))
			t.mu.Unlock()
			return
		}
		if r.Status != http.StatusTooManyRequests {
			break
		}
		t.mu.Lock()
		t.waited++
		t.mu.Unlock()
		select {
		case <-time.After(r.retryAfter()):
		case <-ctx.Done():
			return
		}
	}
	created := time.Now()
	t.count(t.creates, fmt.Sprint(r.Status))
	var out run
	if r.Status != http.StatusCreated || r.decode(&out) != nil {
		t.mu.Lock()
		t.errs = append(t.errs, fmt.Sprintf("account %d: create answered %d: %s", account+1, r.Status, r.snippet()))
		t.mu.Unlock()
		return
	}
	select {
	case <-time.After(time.Until(created.Add(cancelAfter))):
	case <-ctx.Done():
	}
	cr, err := c.do(context.WithoutCancel(ctx), "POST", "/api/v1/runs/"+out.RunNo+"/cancel", key, nil, nil)
	switch {
	case err != nil:
		t.count(t.cancels, "error")
	case cr.Status == http.StatusConflict:
		t.count(t.cancels, "409 (finished first)")
	default:
		t.count(t.cancels, fmt.Sprint(cr.Status))
	}
}
