package bench

import (
	"context"
	"errors"
	"io"
	"net/url"
	"os"
	"syscall"
	"testing"
)

// A failure's kind is what a client saw of it, whatever wraps it.
func TestErrKindNamesWhatTheClientSaw(t *testing.T) {
	t.Parallel()
	post := func(err error) error { return &url.Error{Op: "Post", URL: "http://127.0.0.1:1/api/v1/runs", Err: err} }
	for _, c := range []struct {
		status int
		err    error
		want   string
	}{
		{503, nil, "create: 503"},
		{0, statusError{"event stream", 503}, "create: 503"},
		{0, post(&os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}), "create: connection refused"},
		{0, post(syscall.ECONNRESET), "create: connection reset"},
		{0, post(io.ErrUnexpectedEOF), "create: connection closed"},
		{0, post(context.DeadlineExceeded), "create: timeout"},
		{0, errStreamCut, "create: ended before the run did"},
		{0, post(errors.New("something else")), "create: something else"},
	} {
		if got := errKind("create", c.status, c.err); got != c.want {
			t.Errorf("errKind(%d, %v) = %q, want %q", c.status, c.err, got, c.want)
		}
	}
}

func TestTallyListsKindsMostFrequentFirst(t *testing.T) {
	t.Parallel()
	var tl tally
	tl.add("read", 503, nil, []byte("busy\n"))
	tl.add("create", 503, nil, []byte("first"))
	tl.add("create", 503, nil, []byte("second"))
	if got, want := tl.String(), "create: 503 ×2 (first: first); read: 503 ×1 (first: busy)"; got != want {
		t.Errorf("tally: %q, want %q", got, want)
	}
	if tl.total() != 3 {
		t.Errorf("total %d, want 3", tl.total())
	}
}
