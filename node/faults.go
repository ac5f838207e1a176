package node

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
)

// ambiguousAdmissions is a test fault, only with --test-apps: every n-th
// admission batch (the write that charges and creates a run) ends with its
// outcome unknown to the node, the way a lost ack or a leader change
// leaves it. Odd ones are stored and their answer dropped; even ones are
// never sent, as a timeout before the write reached the stream. The rest
// of the log, the fence included, is the real one.
type ambiguousAdmissions struct {
	port.Log
	every int64
	n     atomic.Int64
}

func (a *ambiguousAdmissions) Append(ctx context.Context, entries ...port.Entry) (uint64, error) {
	if !admission(entries) {
		return a.Log.Append(ctx, entries...)
	}
	n := a.n.Add(1)
	if n%a.every != 0 {
		return a.Log.Append(ctx, entries...)
	}
	if (n/a.every)%2 == 1 {
		seq, err := a.Log.Append(ctx, entries...)
		return 0, fmt.Errorf("%w: test fault: the answer of an admission was dropped (stored at %d, %v)", port.ErrAmbiguous, seq, err)
	}
	return 0, fmt.Errorf("%w: test fault: an admission timed out before it was sent", port.ErrAmbiguous)
}

// admission: a batch that queues a run's job is an admission.
func admission(entries []port.Entry) bool {
	for _, e := range entries {
		if kind, _ := subjects.Parse(e.Subject); kind == subjects.KindJob {
			return true
		}
	}
	return false
}
