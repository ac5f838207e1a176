package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An event stream opened on a kept-alive connection, after a request the
// edge gave a write deadline of RequestTimeout, outlives that deadline: it
// does not inherit the earlier request's deadline.
func TestAStreamOnAKeptAliveConnectionOutlivesTheRequestTimeout(t *testing.T) {
	t.Parallel()
	h := start(t, withLimits(noLimits), withRequestTimeout(300*time.Millisecond), withHeartbeat(50*time.Millisecond))
	a := h.account(100)
	runNo := h.create(a, testRun("hold"))
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	fmt.Fprintf(conn, "GET /api/v1/runs/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", runNo, a.Key)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the read: %v %v", resp, err)
	}
	var body [1 << 16]byte
	for {
		if _, err := resp.Body.Read(body[:]); err != nil {
			break
		}
	}
	fmt.Fprintf(conn, "GET /api/v1/runs/%s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", runNo, a.Key)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the stream on the same connection: %v %v", resp, err)
	}
	began := time.Now()
	sc := bufio.NewScanner(resp.Body)
	for time.Since(began) < time.Second {
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		if !sc.Scan() {
			t.Fatalf("the stream ended %v after it opened, on a connection a read had used: %v", time.Since(began), sc.Err())
		}
	}
	h.releaseHeld()
}
