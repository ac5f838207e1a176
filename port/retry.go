package port

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// firstAttempt and lastAttempt bound one request made by Retry: the
// first tries are short, doubling up to lastAttempt. Nodes starting
// together on a fresh cluster create the same streams at once, and of
// concurrent creates of one stream all but one go unanswered: a 5 s wait
// for each made such a start take 13-22 s.
const (
	firstAttempt = time.Second
	lastAttempt  = 5 * time.Second
)

// Retry calls fn with a bounded context until it succeeds or ctx ends.
// Start-up requests need it: during a cluster's leader election a
// JetStream request can go unanswered, and a caller without a deadline
// would wait for ever.
func Retry(ctx context.Context, logger *slog.Logger, what string, fn func(context.Context) error) error {
	var lastLog time.Time
	for attempt := firstAttempt; ; attempt = min(2*attempt, lastAttempt) {
		actx, cancel := context.WithTimeout(ctx, attempt)
		err := fn(actx)
		cancel()
		if err == nil {
			return nil
		}
		if logger != nil && time.Since(lastLog) > 5*time.Second {
			logger.Info("waiting for JetStream", "what", what, "err", err)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
