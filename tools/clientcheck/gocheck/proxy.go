package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// proxy forwards TCP both ways and cuts the first event stream it sees
// after its after-th event: a dropped connection a client must resume
// from by itself. fin closes the client's socket (a FIN: with a body
// framed by the connection's end, a cut that looks like a clean end),
// rst resets it. Every other connection, and every later stream, passes
// untouched. It reads the responses' framing (Content-Length, chunked) so
// that a stream after other responses on a kept-alive connection is
// found, and counts events in the de-chunked body, so chunk boundaries
// need not fall between events.
func proxy(args []string) error {
	fs := flag.NewFlagSet("proxy", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	target := fs.String("target", "", "address to forward to")
	cut := fs.String("cut", "fin", "how to cut: fin or rst")
	after := fs.Int("after", 8, "cut after this many events (blocks with an id: field)")
	fs.Parse(args)
	if *target == "" || (*cut != "fin" && *cut != "rst") || *after < 1 {
		return errors.New("proxy: want -target HOST:PORT, -cut fin|rst, -after N>0")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Printf("proxy: listening on %s\n", ln.Addr())
	var claimed atomic.Bool // the one stream to cut has been found
	for n := 1; ; n++ {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		fmt.Printf("proxy: connection %d\n", n)
		go forward(c.(*net.TCPConn), *target, *cut, *after, n, &claimed)
	}
}

func forward(client *net.TCPConn, target, cut string, after, n int, claimed *atomic.Bool) {
	defer client.Close()
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		io.Copy(server, client)
		server.(*net.TCPConn).CloseWrite()
	}()
	w := &watcher{after: after, claimed: claimed}
	buf := make([]byte, 32<<10)
	for {
		nr, err := server.Read(buf)
		if nr > 0 {
			data := buf[:nr]
			if at := w.feed(data); at >= 0 {
				client.Write(data[:at])
				// Let the client read the last event before the cut: a reset
				// discards what the client's kernel holds unread.
				time.Sleep(100 * time.Millisecond)
				if cut == "rst" {
					client.SetLinger(0)
				}
				fmt.Printf("proxy: cut %s connection %d after %d events\n", cut, n, w.events)
				return // the deferred Closes: FIN, or RST after SetLinger(0)
			}
			if _, err := client.Write(data); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// watcher follows the server→client bytes of one connection, response by
// response, byte by byte (the streams here are small).
type watcher struct {
	after   int
	claimed *atomic.Bool

	state    int // headState, sizeState, dataState, crlfState, trailerState, rawState, lengthState
	head     []byte
	line     []byte // a chunk-size or trailer line
	left     int64  // bytes left in a chunk or a Content-Length body
	counting bool   // this response is the stream to cut

	// the event scanner over the de-chunked stream body
	sseLine []byte // the current line's first bytes
	sseLen  int
	hasID   bool
	events  int
}

const (
	headState = iota
	sizeState
	dataState
	crlfState
	trailerState
	rawState
	lengthState
)

// feed takes the next bytes from the server and returns the offset just
// after the after-th event of the stream to cut, or -1.
func (w *watcher) feed(data []byte) int {
	for i, b := range data {
		body := false
		switch w.state {
		case headState:
			w.head = append(w.head, b)
			if bytes.HasSuffix(w.head, []byte("\r\n\r\n")) {
				w.startBody()
			}
		case sizeState, trailerState:
			if b != '\n' {
				w.line = append(w.line, b)
				continue
			}
			line := strings.TrimSpace(string(w.line))
			w.line = w.line[:0]
			if w.state == trailerState {
				if line == "" {
					w.state = headState
				}
				continue
			}
			size, _, _ := strings.Cut(line, ";")
			w.left, _ = strconv.ParseInt(size, 16, 64)
			w.state = dataState
			if w.left == 0 {
				w.state = trailerState
			}
		case dataState:
			body = true
			if w.left--; w.left == 0 {
				w.state = crlfState
				w.left = 2
			}
		case crlfState:
			if w.left--; w.left == 0 {
				w.state = sizeState
			}
		case lengthState:
			body = true
			if w.left--; w.left == 0 {
				w.state = headState
			}
		case rawState:
			body = true
		}
		if body && w.counting && w.scan(b) {
			return i + 1
		}
	}
	return -1
}

// startBody reads a response head and sets how its body is framed.
func (w *watcher) startBody() {
	head := strings.ToLower(string(w.head))
	w.head = w.head[:0]
	status, _, _ := strings.Cut(head, "\r\n")
	header := func(name string) string {
		for _, l := range strings.Split(head, "\r\n")[1:] {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == name {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	f := strings.Fields(status)
	code := ""
	if len(f) > 1 {
		code = f[1]
	}
	w.counting = false
	if code == "200" && strings.HasPrefix(header("content-type"), "text/event-stream") && w.claimed.CompareAndSwap(false, true) {
		w.counting = true
	}
	switch {
	case strings.HasPrefix(code, "1") || code == "204" || code == "304":
		w.state = headState
	case strings.Contains(header("transfer-encoding"), "chunked"):
		w.state = sizeState
	case header("content-length") != "":
		w.left, _ = strconv.ParseInt(header("content-length"), 10, 64)
		w.state = lengthState
		if w.left <= 0 {
			w.state = headState
		}
	default:
		w.state = rawState // to the connection's end
	}
}

// scan takes one byte of the stream's body and says whether it ended the
// after-th event: a blank line closing a block that had an id: field.
func (w *watcher) scan(b byte) bool {
	switch b {
	case '\r':
		return false
	case '\n':
		if w.sseLen == 0 {
			ended := w.hasID
			w.hasID = false
			if ended {
				w.events++
			}
			return ended && w.events == w.after
		}
		if bytes.HasPrefix(w.sseLine, []byte("id:")) {
			w.hasID = true
		}
		w.sseLine, w.sseLen = w.sseLine[:0], 0
		return false
	}
	if w.sseLen < 3 {
		w.sseLine = append(w.sseLine, b)
	}
	w.sseLen++
	return false
}
