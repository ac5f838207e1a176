package httpapi_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/node"
)

func TestStreamReplaysTheWholeLogAndEnds(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	runNo := h.Create(a, ColdEmailRun())
	evs := h.Collect(a, runNo)
	// started, analyze, plan, 3 × write, review, completed
	if got := EventNames(evs); got != "started,tool_running,tool_running,tool_running,tool_running,tool_running,tool_running,completed" {
		t.Fatalf("events %s", got)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].ID <= evs[i-1].ID {
			t.Fatalf("ids not increasing: %d then %d", evs[i-1].ID, evs[i].ID)
		}
	}
	done := evs[len(evs)-1].Data
	if done["summary"] == "" || done["output"] == nil || done["result_url"] != "/api/v1/runs/"+runNo {
		t.Fatalf("completed data %v", done)
	}
	step := evs[1].Data
	if step["tool"] == nil || step["message"] == nil || step["step"] != float64(1) || step["steps"] != float64(6) {
		t.Fatalf("tool_running data %v", step)
	}
	// A replay is the same log, event for event.
	again := h.Collect(a, runNo)
	if len(again) != len(evs) {
		t.Fatalf("second replay has %d events, first %d", len(again), len(evs))
	}
	for i := range evs {
		if again[i].ID != evs[i].ID || again[i].Event != evs[i].Event {
			t.Fatalf("replay differs at %d: %+v vs %+v", i, again[i], evs[i])
		}
	}
}

func TestStreamResumesExactlyAfterTheGivenID(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	runNo := h.Create(a, ColdEmailRun())
	all := h.Collect(a, runNo)
	for _, via := range []string{"Last-Event-ID", "lastEventSeq"} {
		for cut := 0; cut < len(all)-1; cut++ { // resumed at the end: TestAStreamResumedAtItsEndAnswers204
			id := strconv.FormatUint(all[cut].ID, 10)
			var rest []SSEEvent
			if via == "Last-Event-ID" {
				rest = h.Collect(a, runNo, "Last-Event-ID", id)
			} else {
				rest = h.Collect(a, runNo, "?lastEventSeq="+id)
			}
			want := all[cut+1:]
			if len(rest) != len(want) {
				t.Fatalf("%s=%s: %d events, want %d (%s vs %s)", via, id, len(rest), len(want), EventNames(rest), EventNames(want))
			}
			for i := range want {
				if rest[i].ID != want[i].ID || rest[i].Event != want[i].Event {
					t.Fatalf("%s=%s: event %d is %d/%s, want %d/%s", via, id, i, rest[i].ID, rest[i].Event, want[i].ID, want[i].Event)
				}
			}
		}
	}
	// The header wins over the query (EventSource keeps the URL and sends the header).
	r := h.Do("GET", "/api/v1/runs/"+runNo+"/events?lastEventSeq=0", a.Key, nil, "Last-Event-ID", strconv.FormatUint(all[len(all)-2].ID, 10))
	if !strings.Contains(string(r.Body), "event: completed") || strings.Contains(string(r.Body), "event: started") {
		t.Fatalf("Last-Event-ID did not take precedence: %s", r.Body)
	}
	for _, bad := range []string{"?lastEventSeq=abc", "?lastEventSeq=-1"} {
		if r := h.Do("GET", "/api/v1/runs/"+runNo+"/events"+bad, a.Key, nil); r.Status != 400 || r.ErrorCode(t) != "invalid_request" {
			t.Fatalf("%s: %d %s", bad, r.Status, r.Body)
		}
	}
}

// An EventSource reconnects after a stream that ended normally, with the
// terminal event's id. Resumed at or after a finished run's end, the stream
// answers 204 No Content, which tells EventSource to stop reconnecting; the
// client already has that event, so nothing is sent again.
func TestAStreamResumedAtItsEndAnswers204(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	runNo := h.Create(a, ColdEmailRun())
	all := h.Collect(a, runNo)
	last := all[len(all)-1].ID
	for _, resume := range [][]string{
		{"Last-Event-ID", strconv.FormatUint(last, 10)},
		{"Last-Event-ID", strconv.FormatUint(last+1000, 10)},
		{"?lastEventSeq=" + strconv.FormatUint(last, 10)},
	} {
		path := "/api/v1/runs/" + runNo + "/events"
		hdr := resume
		if strings.HasPrefix(resume[0], "?") {
			path, hdr = path+resume[0], nil
		}
		r := h.Do("GET", path, a.Key, nil, hdr...)
		if r.Status != 204 || len(r.Body) != 0 {
			t.Fatalf("resumed with %v after the end: %d %q, want 204 and no body", resume, r.Status, r.Body)
		}
	}
	// Resumed one event before the end, the terminal event comes once.
	rest := h.Collect(a, runNo, "Last-Event-ID", strconv.FormatUint(all[len(all)-2].ID, 10))
	if len(rest) != 1 || rest[0].ID != last {
		t.Fatalf("resumed before the end: %s", EventNames(rest))
	}
}

func TestStreamFollowsALiveRunAndResumesMidway(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("hold"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// First connection: read until the held run has reported its first step, then drop.
	c1, cancel1 := context.WithCancel(ctx)
	events, _, _ := h.Stream(c1, a, runNo)
	var seen []SSEEvent
	for ev := range events {
		seen = append(seen, ev)
		if ev.Event == "tool_running" {
			break
		}
	}
	cancel1()
	if EventNames(seen) != "started,tool_running" {
		t.Fatalf("live events before release: %s", EventNames(seen))
	}
	// Second connection resumes from the last id, and follows live.
	events2, _, _ := h.Stream(ctx, a, runNo, "Last-Event-ID", strconv.FormatUint(seen[len(seen)-1].ID, 10))
	h.ReleaseHeld()
	var rest []SSEEvent
	for ev := range events2 {
		rest = append(rest, ev)
	}
	if ctx.Err() != nil || EventNames(rest) != "tool_running,completed" {
		t.Fatalf("resumed stream: %s (ctx %v)", EventNames(rest), ctx.Err())
	}
	if rest[0].ID <= seen[len(seen)-1].ID {
		t.Fatalf("resumed stream repeats id %d", rest[0].ID)
	}
	// The terminal event implies the result is readable at once.
	if run := h.Do("GET", "/api/v1/runs/"+runNo, a.Key, nil).JSON(t); run["status"] != "completed" {
		t.Fatalf("after the completed event the run reads %v", run["status"])
	}
}

// Resumed past the end of a live run (an id it never sent, as a client
// of another run's stream might), the stream follows the run to its end
// and ends (issue 47: it sent heartbeats only, 97 s after the run ended).
func TestAResumePastTheEndOfALiveRunFollowsItToItsEnd(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("hold"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events, _, resp := h.Stream(ctx, a, runNo, "Last-Event-ID", "999999999")
	if resp.StatusCode != 200 {
		t.Fatalf("resume past the end of a live run: %d", resp.StatusCode)
	}
	h.ReleaseHeld()
	var got []SSEEvent
	for ev := range events {
		got = append(got, ev)
	}
	if ctx.Err() != nil || len(got) == 0 || got[len(got)-1].Event != "completed" {
		t.Fatalf("the stream: %s (ctx %v)", EventNames(got), ctx.Err())
	}
}

func TestStreamSendsHeartbeatComments(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithHeartbeat(100*time.Millisecond))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("hold"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, comments, resp := h.Stream(ctx, a, runNo)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	for i := 0; i < 2; i++ {
		select {
		case c := <-comments:
			if !strings.HasPrefix(c, ":") {
				t.Fatalf("heartbeat %q is not an SSE comment", c)
			}
		case <-ctx.Done():
			t.Fatal("no heartbeat within 10s at a 100ms interval")
		}
	}
}

// Every stream opens with a reconnection hint.
func TestAStreamOpensWithARetryHint(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("ok"))
	h.Collect(a, runNo)
	r := h.Do("GET", "/api/v1/runs/"+runNo+"/events", a.Key, nil)
	if !strings.HasPrefix(string(r.Body), "retry: 3000\n\n") {
		t.Fatalf("stream starts %q, want a retry: hint", string(r.Body)[:min(len(r.Body), 40)])
	}
}

func TestStreamTokensOpenOnlyTheirRunAndExpire(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), func(c *node.Config) { c.StreamTokenTTL = 2 * time.Second })
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("ok"))
	other := h.Create(a, RunTestApp("ok"))
	r := h.Do("POST", "/api/v1/runs/"+runNo+"/stream-token", a.Key, nil)
	m := r.JSON(t)
	tok, _ := m["token"].(string)
	if r.Status != 201 || tok == "" || m["stream_url"] != "/api/v1/runs/"+runNo+"/events?token="+tok || m["expires_at"] == nil {
		t.Fatalf("stream token: %d %s", r.Status, r.Body)
	}
	open := func(run, token string) Response {
		return h.Do("GET", "/api/v1/runs/"+run+"/events?token="+url.QueryEscape(token), "", nil)
	}
	if s := open(runNo, tok); s.Status != 200 || !strings.Contains(string(s.Body), "event: completed") {
		t.Fatalf("own run with its token: %d %s", s.Status, s.Body)
	}
	for name, s := range map[string]Response{
		"another run":    open(other, tok),
		"a forged token": open(runNo, tok[:len(tok)-2]+"AA"),
		"no token":       open(runNo, ""),
	} {
		if s.Status != 401 || s.ErrorCode(t) != "unauthorized" {
			t.Fatalf("%s: %d %s, want 401", name, s.Status, s.Body)
		}
	}
	if s := h.Do("GET", "/api/v1/runs/"+runNo+"?token="+url.QueryEscape(tok), "", nil); s.Status != 401 {
		t.Fatalf("the token opened the run itself: %d; it grants only the event stream", s.Status)
	}
	if s := h.Do("POST", "/api/v1/runs/"+h.Create(h.Account(10), RunTestApp("ok"))+"/stream-token", a.Key, nil); s.Status != 404 {
		t.Fatalf("a token for another account's run: %d, want 404", s.Status)
	}
	deadline := time.Now().Add(10 * time.Second)
	for open(runNo, tok).Status == 200 { // expiry is a time, not an event: poll it
		if time.Now().After(deadline) {
			t.Fatal("the token outlived its 2s lifetime by 10s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if s := open(runNo, tok); s.Status != 401 || !strings.Contains(string(s.Body), "expired") {
		t.Fatalf("expired token: %d %s", s.Status, s.Body)
	}
}
