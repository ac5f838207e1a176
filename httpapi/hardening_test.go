package httpapi_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/internal/logbuf"
)

func TestEventStreamsPerKeyAreCapped(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithStreamsPerKey(2))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("hold"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first, cancelFirst := context.WithCancel(ctx)
	for _, c := range []context.Context{first, ctx} {
		evs, _, resp := h.Stream(c, a, runNo)
		if resp.StatusCode != 200 {
			t.Fatalf("stream within the cap: %d", resp.StatusCode)
		}
		<-evs // started: the stream is being served
	}
	r := h.Do("GET", "/api/v1/runs/"+runNo+"/events", a.Key, nil)
	if r.Status != 429 || r.ErrorCode(t) != "concurrency_limit" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("third stream: %d %s", r.Status, r.Body)
	}
	// Another key of the same account has its own streams.
	k2 := Account{Key: h.Do("POST", "/admin/v1/accounts/"+a.ID+"/keys", AdminToken, nil).JSON(t)["api_key"].(string)}
	if _, _, resp := h.Stream(ctx, k2, runNo); resp.StatusCode != 200 {
		t.Fatalf("another key: %d", resp.StatusCode)
	}
	// Closing a stream frees its place.
	cancelFirst()
	for {
		c2, stop := context.WithCancel(ctx)
		_, _, resp := h.Stream(c2, a, runNo)
		stop()
		if resp.StatusCode == 200 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("a closed stream's place was never freed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Nothing reads an open stream's connection (a reader per stream was a
// third of its memory), so a dropped stream would only notice at its next
// write. A key at its cap asks its streams first: a client that drops
// its connection and reconnects at once finds its place free, long
// before the next heartbeat (15 s here).
func TestAStreamDroppedAtTheCapFreesItsPlaceAtOnce(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithStreamsPerKey(1))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("hold"))
	defer h.ReleaseHeld()
	conn := rawStream(t, h, a, runNo)
	if r := h.Do("GET", "/api/v1/runs/"+runNo+"/events", a.Key, nil); r.Status != 429 {
		t.Fatalf("a second stream past the cap of 1: %d %s", r.Status, r.Body)
	}
	conn.Close()
	// The close reaches the server a moment after it returns: a few tries,
	// well within the heartbeat.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for began := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		c, stop := context.WithCancel(ctx)
		_, _, resp := h.Stream(c, a, runNo)
		stop()
		if resp.StatusCode == 200 {
			t.Logf("reopened after %s", time.Since(began))
			break
		}
		if time.Since(began) > 3*time.Second {
			t.Fatalf("a dropped stream's place was still taken after %s: %d", time.Since(began), resp.StatusCode)
		}
	}
}

// A stream whose client dropped it on a quiet run (nothing to write)
// ends by its next heartbeat, which looks first. The client here closes
// only its sending side and goes on reading: the heartbeats' writes then
// succeed, and only the look ends the stream (without it the stream
// stays open however long the test waits). A client that closes its
// whole connection is covered too: the write after a look that missed
// fails.
func TestADroppedStreamOnAQuietRunEndsByItsHeartbeat(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithHeartbeat(100*time.Millisecond))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("hold"))
	defer h.ReleaseHeld()
	open := func() string {
		for _, line := range strings.Split(string(h.Do("GET", "/metrics", "", nil).Body), "\n") {
			if v, ok := strings.CutPrefix(line, "apprun_sse_clients "); ok {
				return v
			}
		}
		return "none"
	}
	conn := rawStream(t, h, a, runNo).(*net.TCPConn)
	if n := open(); n != "1" {
		t.Fatalf("apprun_sse_clients with one stream: %s", n)
	}
	if err := conn.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { // reads on, as a client that only stopped sending would
		_, err := io.Copy(io.Discard, conn)
		closed <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); open() != "0"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a dropped stream still open after 10 s of 100 ms heartbeats: apprun_sse_clients %s", open())
		}
	}
	if err := <-closed; err != nil {
		t.Fatalf("the client's read ended with %v, want the server's close", err)
	}
}

// rawStream opens runNo's event stream on a bare connection, as the
// bench's clients do, and returns it once the first event arrived.
func rawStream(t *testing.T, h *Harness, a Account, runNo string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", HostAddr(h))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	head := "GET /api/v1/runs/" + runNo + "/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + a.Key + "\r\n\r\n"
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	if status, _ := r.ReadString('\n'); !strings.Contains(status, " 200 ") {
		t.Fatalf("the stream: %q", status)
	}
	for line := ""; !strings.HasPrefix(line, "event: "); {
		if line, err = r.ReadString('\n'); err != nil {
			t.Fatalf("the stream's first event: %v", err)
		}
	}
	return conn
}

func TestEventStreamsOutliveTheRequestTimeout(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithRequestTimeout(200*time.Millisecond), WithHeartbeat(50*time.Millisecond))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("hold"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events, comments, _ := h.Stream(ctx, a, runNo)
	<-events
	began := time.Now()
	for time.Since(began) < 600*time.Millisecond {
		select {
		case <-comments:
		case <-ctx.Done():
			t.Fatal("heartbeats stopped")
		}
	}
	h.ReleaseHeld()
	var last SSEEvent
	for ev := range events {
		last = ev
	}
	if last.Event != "completed" {
		t.Fatalf("a stream open past the request timeout ended with %q, want completed", last.Event)
	}
}

func TestLogsNeverHoldKeysTokensOrInput(t *testing.T) {
	var logs logbuf.Buffer
	h := Start(t, WithLimits(NoLimits), WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	a := h.Account(100)
	secret := "SECRET-PRODUCT-do-not-log"
	body := map[string]any{"app_slug": "cold-email-writer", "input": map[string]any{"product_description": secret, "target_role": "CFOs"}}
	h.WaitRun(a, h.Create(a, body))
	h.WaitRun(a, h.Create(a, RunTestApp("fail")))
	h.Do("POST", "/api/v1/runs", "ak_wrongkey", body)
	h.Do("POST", "/api/v1/runs", a.Key, map[string]any{"app_slug": "cold-email-writer", "input": map[string]any{"product_description": secret}})
	h.Node.EmbeddedNATS().Stop() // errors get logged: make sure they carry nothing secret either
	h.Do("POST", "/api/v1/runs", a.Key, body)
	if logs.String() == "" {
		t.Fatal("nothing was logged: the test proves nothing")
	}
	for _, s := range []string{a.Key, AdminToken, secret} {
		if strings.Contains(logs.String(), s) {
			t.Fatalf("logs contain %q:\n%s", s, logs.String())
		}
	}
}
