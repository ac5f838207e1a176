package eventlog

import (
	"context"
	"reflect"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// lookupEvery is how often Ensure looks for what it creates.
const lookupEvery = 200 * time.Millisecond

// Ensure creates something in JetStream (a stream, a bucket) with create,
// and meanwhile looks every 200 ms with lookup whether it already exists
// as wanted. Nodes starting together on a fresh cluster create the same
// streams at the same moment; the server answers one of these equal
// creates and may leave the others unanswered until their timeout (each
// node then waited out a 5 s timeout per stream: a 3-node start on an
// external cluster took 13-22 s). lookup reports true only when what
// exists has the wanted configuration.
func Ensure[T any](ctx context.Context, create func(context.Context) (T, error), lookup func(context.Context) (T, bool)) (T, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := create(ctx)
		done <- result{v, err}
	}()
	t := time.NewTicker(lookupEvery)
	defer t.Stop()
	for {
		select {
		case r := <-done:
			return r.v, r.err
		case <-t.C:
			lctx, lcancel := context.WithTimeout(ctx, lookupEvery)
			v, ok := lookup(lctx)
			lcancel()
			if ok {
				return v, nil
			}
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
}

// ensureStream creates or updates a stream (Ensure: an equal stream made
// by another member at the same moment will do).
func ensureStream(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig) (jetstream.Stream, error) {
	return Ensure(ctx, func(ctx context.Context) (jetstream.Stream, error) {
		return js.CreateOrUpdateStream(ctx, sc)
	}, func(ctx context.Context) (jetstream.Stream, bool) {
		st, err := js.Stream(ctx, sc.Name)
		if err != nil {
			return nil, false
		}
		return st, sameStream(st.CachedInfo().Config, sc)
	})
}

// sameStream reports whether a stream's configuration has every setting
// apprun gives it.
func sameStream(have, want jetstream.StreamConfig) bool {
	return slices.Equal(have.Subjects, want.Subjects) && have.Storage == want.Storage && have.Replicas == want.Replicas &&
		have.AllowDirect == want.AllowDirect && have.AllowAtomicPublish == want.AllowAtomicPublish &&
		have.AllowMsgTTL == want.AllowMsgTTL && have.AllowRollup == want.AllowRollup &&
		have.MaxAge == want.MaxAge && have.MaxMsgsPerSubject == want.MaxMsgsPerSubject && have.Discard == want.Discard &&
		have.DiscardNewPerSubject == want.DiscardNewPerSubject && (want.Duplicates == 0 || have.Duplicates == want.Duplicates) &&
		reflect.DeepEqual(have.RePublish, want.RePublish) && have.DenyDelete == want.DenyDelete && have.DenyPurge == want.DenyPurge &&
		sameSources(have.Sources, want.Sources)
}
