package apps_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/llm/llmtest"
)

// slowPage is a page built to be slow to parse: 500 nested <div>s, then
// <p>s up to 2 MiB. Read whole by readability it took 11 to 36 s of CPU
// a run, which a cancel did not stop.
func slowPage() string {
	var b strings.Builder
	b.WriteString("<html><head><title>slow</title></head><body>")
	b.WriteString(strings.Repeat("<div>", 500))
	for b.Len() < 2<<20-32 {
		b.WriteString("<p>x</p>")
	}
	return b.String()
}

// slowFeed is a feed whose one item's summary is that page, in CDATA.
func slowFeed() string {
	head := `<?xml version="1.0"?><rss version="2.0"><channel><title>Slow</title><item><title>One</title><link>https://example.com/1</link><description><![CDATA[`
	tail := `]]></description></item></channel></rss>`
	page := slowPage()
	return head + page[:2<<20-len(head)-len(tail)-64] + tail
}

// A canceled run gives its worker back at once, whatever its step was
// doing: parsing a page or a feed built to be slow, or waiting on a model
// that writes slowly. (The bound here is not a speed target: the worker
// was held for the whole parse, tens of seconds, before.)
func TestACanceledRunGivesItsWorkerBackAtOnce(t *testing.T) {
	t.Parallel()
	page, feed := slowPage(), slowFeed()
	served := make(chan string, 8)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(page))
		case "/feed":
			w.Header().Set("Content-Type", "application/rss+xml")
			_, _ = w.Write([]byte(feed))
		default:
			http.NotFound(w, r)
			return
		}
		served <- r.URL.Path
	}))
	defer web.Close()
	fake := llmtest.New()
	defer fake.Close()
	// A model that takes a minute to write its reply.
	fake.Answer = func(llmtest.Received) llmtest.Reply {
		return llmtest.Reply{Text: strings.Repeat("x", 600), Chunks: 600, ChunkDelay: 100 * time.Millisecond}
	}
	h := Start(t, WithLimits(NoLimits), WithModel(fake), WithSourcesAllowPrivate())
	a := h.Account(1000)

	for _, tc := range []struct {
		name  string
		body  map[string]any
		begun func() bool
	}{
		{"a page built to be slow", map[string]any{"app_slug": "meta-tags-from-page", "input": map[string]any{"page_url": web.URL + "/page"}},
			func() bool { return len(served) > 0 && <-served == "/page" }},
		{"a feed built to be slow", map[string]any{"app_slug": "newsletter-from-feed", "input": map[string]any{"feed_url": web.URL + "/feed"}},
			func() bool { return len(served) > 0 && <-served == "/feed" }},
		{"a slow model", ColdEmailRun(), func() bool { return len(fake.Received()) > 0 }},
	} {
		runNo := h.Create(a, tc.body)
		WaitFor(t, 30*time.Second, tc.name+": the step began", tc.begun)
		if r := h.Do("POST", "/api/v1/runs/"+runNo+"/cancel", a.Key, nil); r.Status != 200 {
			t.Fatalf("%s: cancel: %d %s", tc.name, r.Status, r.Body)
		}
		canceled := time.Now()
		WaitFor(t, 5*time.Second, tc.name+": the worker given back after the cancel", func() bool {
			return h.Node.Engine().Stats().WorkersBusy == 0
		})
		t.Logf("%s: the worker was back %s after the cancel", tc.name, time.Since(canceled).Round(time.Millisecond))
	}
	if bal, active := h.Balance(a); bal != 1000 || active != 0 {
		t.Fatalf("after three canceled runs: balance %d, %d active; want 1000 and 0", bal, active)
	}
}
