package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// tally counts a load's failed requests by kind ("create: 503",
// "read: connection refused"), keeping the first of each: under node
// kills some are expected, and their kinds say whether they are the
// kill's (refused, reset, a 503 during an election) or something else.
type tally struct {
	mu    sync.Mutex
	n     map[string]int
	first map[string]string
}

// add counts one failure of op: an answer with status (err nil) or a
// request that got none (err), and returns its kind.
func (t *tally) add(op string, status int, err error, body []byte) string {
	kind := errKind(op, status, err)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == nil {
		t.n, t.first = map[string]int{}, map[string]string{}
	}
	if t.n[kind]++; t.n[kind] == 1 {
		what := string(body)
		if err != nil {
			what = err.Error()
		}
		what = strings.TrimSpace(what)
		t.first[kind] = what[:min(len(what), 200)]
	}
	return kind
}

// total is how many failures were counted.
func (t *tally) total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, v := range t.n {
		n += v
	}
	return n
}

// String lists the kinds, most frequent first, each with its count.
func (t *tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	kinds := slices.Collect(maps.Keys(t.n))
	slices.SortFunc(kinds, func(a, b string) int {
		if t.n[a] != t.n[b] {
			return t.n[b] - t.n[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s ×%d (first: %s)", k, t.n[k], t.first[k])
	}
	return strings.Join(parts, "; ")
}

// errKind names a failure by what a client sees of it.
func errKind(op string, status int, err error) string {
	var nerr net.Error
	var serr statusError
	switch {
	case err == nil:
		return fmt.Sprintf("%s: %d", op, status)
	case errors.As(err, &serr):
		return fmt.Sprintf("%s: %d", op, serr.code)
	case errors.Is(err, syscall.ECONNREFUSED):
		return op + ": connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return op + ": connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return op + ": connection closed"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return op + ": timeout"
	case errors.Is(err, errStreamCut):
		return op + ": ended before the run did"
	default:
		var uerr *url.Error // "Post \"http://…\": …": the kind is what follows
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		msg := err.Error()
		return op + ": " + msg[:min(len(msg), 60)]
	}
}

// retryable says whether a request that failed so may be sent again, to
// another node: no answer, an answer from a node that cannot serve now
// (5xx, a busy window), or an idempotent create still in progress.
func retryable(status int, err error) bool {
	return err != nil || status >= 500 || status == 429 || status == 409
}
