package httpapi

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/apprun/apprun/edge"
	"github.com/apprun/apprun/service/live"
)

// sseWriteWait bounds one write to an event-stream client: a client that
// takes longer is gone or too slow, and resumes with Last-Event-ID.
const sseWriteWait = 30 * time.Second

// sseConn writes one event stream. On HTTP/1.1 it takes the connection
// over from net/http once the request is validated: the stream then holds
// no net/http buffers (about 10 KiB a connection). It writes the body in
// chunked transfer encoding itself, so that a client can tell the end of
// a run's stream (the last chunk, after the terminal event) from a cut
// connection (no last chunk: every HTTP client reports an error, and SSE
// clients reconnect). Elsewhere (HTTP/2) it writes through the
// ResponseWriter and flushes; HTTP/2 frames the body itself.
type sseConn struct {
	conn net.Conn // nil: the ResponseWriter path
	w    http.ResponseWriter
	buf  []byte
	// done: the terminal event is queued; the body then ends cleanly.
	done bool
	// back takes the connection back after a clean end, to serve the
	// client's next request on it (edge/reuse.go); nil: closed.
	back *edge.ReuseListener
	// dropped: hungUp read and dropped what the client sent, so the
	// connection is not given back (a request may have been lost).
	dropped atomic.Bool
}

// retryHint opens every stream: how long a client waits before it
// reconnects (EventSource reads it; it then resumes with Last-Event-ID).
const retryHint = "retry: 3000\n\n"

// finalRetry follows a run's terminal event: a client that reconnects on
// every end of a body (fetch-event-source's README pattern, or an
// EventSource left open) then waits a day, not 3 s, and its reconnect
// gets 204. It is a block of its own after the terminal event, so a cut
// between the two leaves the client on 3 s, reconnecting for the terminal
// event. A day stays below the 2^31 ms that JavaScript timers take.
const finalRetry = "retry: 86400000\n\n"

// lastChunk ends a chunked body.
const lastChunk = "0\r\n\r\n"

// openSSE opens the stream. A client's hang-up shows on the other path as
// the end of the request's context; on a taken-over connection as the
// failure of a write, or of hungUp, which the heartbeats and the stream
// caps ask (hangup.go).
func openSSE(w http.ResponseWriter, r *http.Request) (*sseConn, error) {
	h := w.Header()
	sseHeaders(h)
	if r.ProtoMajor == 1 && r.ProtoMinor == 1 {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err == nil {
			if brw.Reader.Buffered() > 0 { // a pipelined request: not ours to drop
				conn.Close()
				return nil, http.ErrAbortHandler
			}
			s := &sseConn{conn: conn, back: edge.Reuser(r.Context())}
			return s, s.writeRaw(rawHead(h))
		}
	}
	w.WriteHeader(http.StatusOK)
	s := &sseConn{w: w}
	if err := s.write([]byte(retryHint)); err != nil {
		return s, err
	}
	return s, s.flush()
}

// sseHeaders are an event stream's headers.
func sseHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
}

// rawHead is the response head of a taken-over connection: every header
// the handlers set (RateLimit ones included), a chunked body, then the
// retry hint as its first chunk. No "Connection: close": with it, Node
// 20's fetch (undici 6) takes the connection's end for the body's end
// even inside a chunk, and a cut looked like a clean end again
// (fetch-event-source got 8 of 32 events). After a clean end the
// connection goes back to the server for the client's next request.
func rawHead(h http.Header) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	_ = h.Write(&b)
	b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
	return appendChunk(b.Bytes(), []byte(retryHint))
}

// appendChunk appends p to b as one chunk of a chunked body.
func appendChunk(b, p []byte) []byte {
	b = strconv.AppendInt(b, int64(len(p)), 16)
	b = append(b, "\r\n"...)
	b = append(b, p...)
	return append(b, "\r\n"...)
}

// write sends p as the body's next part: a chunk on a taken-over
// connection.
func (s *sseConn) write(p []byte) error {
	if s.conn == nil {
		_, err := s.w.Write(p)
		return err
	}
	return s.writeRaw(appendChunk(make([]byte, 0, len(p)+16), p))
}

// writeRaw writes p to the taken-over connection as it is.
func (s *sseConn) writeRaw(p []byte) error {
	if err := s.conn.SetWriteDeadline(time.Now().Add(sseWriteWait)); err != nil {
		return err
	}
	_, err := s.conn.Write(p)
	if err != nil {
		s.done = false // no last chunk into a broken connection
	}
	return err
}

// flush sends what event and comment queued: one write for a whole replay.
func (s *sseConn) flush() error {
	if s.conn == nil {
		return http.NewResponseController(s.w).Flush()
	}
	if len(s.buf) == 0 {
		return nil
	}
	err := s.write(s.buf)
	// Not kept: a stream writes about once a second at most, and ten
	// thousand idle streams would hold ten thousand buffers (a tenth of
	// a stream's memory).
	s.buf = nil
	return err
}

// event queues one event (flush sends it).
func (s *sseConn) event(ev live.StreamEvent) error {
	b := append(s.buf, "id: "...)
	b = strconv.AppendUint(b, ev.Seq, 10)
	b = append(b, "\nevent: "...)
	b = append(b, ev.Type...)
	b = append(b, "\ndata: "...)
	b = append(b, ev.Data...)
	b = append(b, "\n\n"...)
	return s.queue(b)
}

// final queues what follows a run's terminal event (finalRetry) and
// marks the stream done: close then ends the body cleanly.
func (s *sseConn) final() error {
	s.done = true
	return s.queue(append(s.buf, finalRetry...))
}

func (s *sseConn) comment(text string) error {
	return s.queue(append(s.buf, ": "+text+"\n\n"...))
}

// queue keeps b as the pending output, or on the ResponseWriter path
// hands it to the ResponseWriter's own buffer at once.
func (s *sseConn) queue(b []byte) error {
	if s.conn != nil {
		s.buf = b
		return nil
	}
	err := s.write(b)
	s.buf = b[:0]
	return err
}

// close ends a taken-over connection's stream: when the run's stream is
// done, with the last chunk, and the connection goes back to the server
// for the client's next request; otherwise (a hang-up, a revocation, the
// node's shutdown, a write that failed) it is closed at once, which a
// client reads as a cut and resumes from. On the ResponseWriter path
// net/http ends the body.
func (s *sseConn) close() {
	if s.conn == nil {
		return
	}
	if s.done && s.writeRaw([]byte(lastChunk)) == nil && s.back != nil && !s.dropped.Load() {
		s.back.Give(s.conn)
		return
	}
	s.conn.Close()
}
