package main

import (
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// events is n SSE events after a retry: block, as apprun sends them.
func events(n int) string {
	s := "retry: 3000\n\n"
	for i := 1; i <= n; i++ {
		s += fmt.Sprintf("id: %d\nevent: tick\ndata: {\"i\":%d}\n\n: heartbeat\n\n", 100+i, i)
	}
	return s
}

// chunked frames body in chunks of size bytes, whatever falls where.
func chunked(body string, size int) string {
	var b strings.Builder
	for len(body) > 0 {
		n := min(size, len(body))
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, body[:n])
		body = body[n:]
	}
	return b.String() + "0\r\n\r\n"
}

var framing = regexp.MustCompile("\r\n[0-9a-f]+\r\n")

// The watcher cuts right after the 8th event however the stream is framed
// and fed, and after another response on the same connection.
func TestWatcherCutsAfterTheEighthEvent(t *testing.T) {
	sse := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	cases := map[string]string{
		"close-delimited":    sse + "Connection: close\r\n\r\n" + events(12),
		"chunked, 7 a chunk": sse + "Transfer-Encoding: chunked\r\n\r\n" + chunked(events(12), 7),
		"after a JSON and a chunked response": "HTTP/1.1 201 Created\r\nContent-Length: 9\r\n\r\n{\"id: \":1}" +
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked("id: 1\n\n", 3) +
			sse + "Transfer-Encoding: chunked\r\n\r\n" + chunked(events(12), 50),
	}
	for name, stream := range cases {
		for _, feed := range []int{1, 5, 4096} {
			w := &watcher{after: 8, claimed: new(atomic.Bool)}
			got := ""
			for i := 0; i < len(stream); i += feed {
				part := stream[i:min(i+feed, len(stream))]
				if at := w.feed([]byte(part)); at >= 0 {
					got += part[:at]
					break
				}
				got += part
			}
			got = framing.ReplaceAllString(got, "") // the chunks' size lines
			if want := "data: {\"i\":8}\n\n"; !strings.HasSuffix(got, want) || strings.Contains(got, "\"i\":9") {
				t.Errorf("%s, fed %d at a time: forwarded up to …%q, want up to the end of event 8", name, feed, got[max(0, len(got)-40):])
			}
		}
	}
}

// Only the first stream is cut: the watcher of a later one passes it.
func TestWatcherCutsOneStream(t *testing.T) {
	claimed := new(atomic.Bool)
	stream := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + events(12)
	if at := (&watcher{after: 8, claimed: claimed}).feed([]byte(stream)); at < 0 {
		t.Fatal("the first stream was not cut")
	}
	if at := (&watcher{after: 8, claimed: claimed}).feed([]byte(stream)); at >= 0 {
		t.Fatal("a second stream was cut")
	}
}
