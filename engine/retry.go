package engine

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// attemptTimeout bounds one JetStream request made by Retry.
const attemptTimeout = 5 * time.Second

// Retry calls fn with a bounded context until it succeeds or ctx ends.
// Start-up requests need it: during a cluster's leader election a
// JetStream request can go unanswered, and a caller without a deadline
// would wait for ever.
func Retry(ctx context.Context, logger *slog.Logger, what string, fn func(context.Context) error) error {
	var lastLog time.Time
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
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
