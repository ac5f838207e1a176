package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
)

// The read limit is the same rule whether a standalone node counts it in
// memory or nodes share the window stream: exactly `limit` reads a minute
// per key, then rate_limited with the wait until the oldest one leaves.
func TestReadLimitIsExactInMemoryAndInTheSharedWindow(t *testing.T) {
	for _, standalone := range []bool{true, false} {
		t.Run(map[bool]string{true: "standalone", false: "shared"}[standalone], func(t *testing.T) {
			e := startEngine(t, false, engine.Limits{ReadsPerMinute: 3}, okApp())
			if standalone {
				e.CountReadsInMemory(3)
			} else {
				e.CountReadsInMemory(0)
			}
			ctx := context.Background()
			for i := range 3 {
				if err := e.AllowRead(ctx, "key_a"); err != nil {
					t.Fatalf("read %d: %v", i+1, err)
				}
			}
			err := e.AllowRead(ctx, "key_a")
			var ee *engine.Error
			if !errors.As(err, &ee) || ee.Code != engine.CodeRateLimited || ee.RetryAfter < 59*time.Second || ee.RetryAfter > time.Minute {
				t.Fatalf("4th read: %v, want rate_limited with Retry-After about 60s", err)
			}
			if err := e.AllowRead(ctx, "key_b"); err != nil {
				t.Fatalf("another key's first read: %v", err)
			}
		})
	}
}
