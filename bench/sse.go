package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
)

// event is one Server-Sent Event as the bench reads it.
type event struct {
	ID   uint64
	Type string
	Data string
}

// stream opens a run's event stream after lastID (0: from the start) and
// calls fn for each event until fn returns false, the stream ends or ctx
// is done. opened, when not nil, is called once the headers arrived.
func (s *Server) stream(ctx context.Context, client *http.Client, key, runNo string, lastID uint64, opened func(), fn func(event) bool) error {
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL+"/api/v1/runs/"+runNo+"/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(lastID, 10))
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return statusError{"event stream", resp.StatusCode}
	}
	if opened != nil {
		opened()
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var ev event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Type != "" && !fn(ev) {
				return nil
			}
			ev = event{}
		case strings.HasPrefix(line, "id: "):
			ev.ID, _ = strconv.ParseUint(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.Type = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.Data = line[6:]
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// statusError is a request answered with a status it did not want.
type statusError struct {
	what string
	code int
}

func (e statusError) Error() string { return fmt.Sprintf("%s: status %d", e.what, e.code) }

func terminal(t string) bool { return t == "completed" || t == "failed" }

// rawStream is stream over a bare HTTP/1.1 connection, read on the
// calling goroutine: net/http's client spends two more goroutines and
// their buffers on every connection, which at 10,000 streams makes the
// measuring process, not the server, the slowest part of a delivery.
// apprun answers an event stream on HTTP/1.1 in chunked encoding, ended
// by the last chunk after the terminal event.
func (s *Server) rawStream(ctx context.Context, key, runNo string, opened func(), fn func(event) bool) error {
	return rawStreamAt(ctx, &net.Dialer{}, strings.TrimPrefix(s.URL, "http://"), key, runNo, 0, opened, fn)
}

// rawStreamAt is rawStream to the server at host, dialled with d (the
// cluster-stream scenario's client processes dial from addresses of
// their own when one address has too few ports), after event lastID
// (Last-Event-ID; 0: from the start).
func rawStreamAt(ctx context.Context, d *net.Dialer, host, key, runNo string, lastID uint64, opened func(), fn func(event) bool) error {
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	resume := ""
	if lastID > 0 {
		resume = "Last-Event-ID: " + strconv.FormatUint(lastID, 10) + "\r\n"
	}
	if _, err := fmt.Fprintf(conn, "GET /api/v1/runs/%s/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n%s\r\n",
		runNo, host, key, resume); err != nil {
		return err
	}
	br := bufio.NewReaderSize(conn, 1024)
	status, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(status, "HTTP/1.1 200 ") {
		return &rawStatusError{strings.TrimSpace(status)}
	}
	for { // headers
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
	}
	if opened != nil {
		opened()
	}
	br = bufio.NewReaderSize(httputil.NewChunkedReader(br), 1024)
	var ev event
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // a long line: gather it
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		line = line[:len(line)-1]
		switch {
		case len(line) == 0:
			if ev.Type != "" && !fn(ev) {
				return nil
			}
			ev = event{}
		case bytes.HasPrefix(line, []byte("id: ")):
			ev.ID, _ = strconv.ParseUint(string(line[4:]), 10, 64)
		case bytes.HasPrefix(line, []byte("event: ")):
			ev.Type = string(line[7:])
		case bytes.HasPrefix(line, []byte("data: ")):
			ev.Data = string(line[6:])
		}
	}
}

// rawStatusError is a raw event stream answered with another status than 200.
type rawStatusError struct{ status string }

func (e *rawStatusError) Error() string { return "event stream: " + e.status }
