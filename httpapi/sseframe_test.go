package httpapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"
)

// eventsRequest asks for a run's event stream with a's key. These tests
// read the raw body and its error, which Harness.Stream keeps to itself.
func eventsRequest(ctx context.Context, h *Harness, a Account, runNo string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, "GET", h.Srv.URL+"/api/v1/runs/"+runNo+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	return req
}

// A run's stream is a chunked body that ends with its last chunk after
// the terminal event and a long retry: an HTTP client reads it to a
// clean end, and a client that reconnects on every end waits a day.
func TestAFinishedStreamEndsWithItsLastChunk(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("ok"))
	h.Collect(a, runNo)
	resp, err := http.DefaultClient.Do(eventsRequest(context.Background(), h, a, runNo))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading a finished run's stream: %v (want a clean end)", err)
	}
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("Transfer-Encoding %v, want chunked", resp.TransferEncoding)
	}
	// Node 20's fetch reads the end of a "Connection: close" response as
	// the end of its body, even inside a chunk: a cut would pass for an end.
	if resp.Close || resp.Header.Get("Connection") != "" {
		t.Fatalf("Connection %q on an event stream; its chunks must frame it", resp.Header.Get("Connection"))
	}
	blocks := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
	if n := len(blocks); n < 3 || !strings.Contains(blocks[n-2], "event: completed") || blocks[n-1] != "retry: 86400000" {
		t.Fatalf("stream ends %q, want the completed event then retry: 86400000", blocks[max(0, n-2):])
	}
}

// A stream that ends before its run's terminal event (here the key's
// revocation) lacks the last chunk: its client sees a cut, not an end.
func TestAStreamEndedBeforeItsRunEndsIsACut(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("hold"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(eventsRequest(ctx, h, a, runNo))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if r := h.Do("DELETE", "/admin/v1/keys/"+a.KeyID, AdminToken, nil); r.Status != 204 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	body, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a stream ended by its key's revocation read as %v after %q, want io.ErrUnexpectedEOF", err, body)
	}
	if strings.Contains(string(body), "86400000") {
		t.Fatal("a stream cut before the run's end sent the final retry")
	}
}

// After a run's stream ends, the client's next request on the same
// connection is served: net/http's client does not retry a POST on a
// connection the server closed under it, and a program that streams a
// run, then creates the next one, must not fail now and then.
func TestTheConnectionOfAFinishedStreamServesTheNextRequest(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(1000)
	runNo := h.Create(a, RunTestApp("ok"))
	h.Collect(a, runNo)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	for i := range 20 {
		resp, err := client.Do(eventsRequest(context.Background(), h, a, runNo))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		reused := false
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(c httptrace.GotConnInfo) { reused = c.Reused }})
		post, _ := http.NewRequestWithContext(ctx, "POST", h.Srv.URL+"/api/v1/runs", strings.NewReader(`{"app_slug":"test-app","input":{"mode":"ok"}}`))
		post.Header.Set("Authorization", "Bearer "+a.Key)
		post.Header.Set("Content-Type", "application/json")
		resp, err = client.Do(post)
		if err != nil {
			t.Fatalf("create %d after a stream on the same client: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 || !reused {
			t.Fatalf("create %d after a stream: %d, on the stream's connection: %v", i, resp.StatusCode, reused)
		}
	}
}
