package eventlog

import (
	"log/slog"
	"strconv"
	"strings"

	"github.com/apprun/apprun/port"
	"github.com/nats-io/nats.go"
)

// live is engine.Live on the stream's republish of run events to core
// NATS: one subscription a node.
type live struct {
	nc     *nats.Conn
	logger *slog.Logger
}

func (l *live) FollowRuns(fn func(port.LiveRunMsg)) (func(), error) {
	sub, err := l.nc.Subscribe(subjLive+"run.*", func(m *nats.Msg) {
		seq, err1 := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
		prev, err2 := strconv.ParseUint(m.Header.Get("Nats-Last-Sequence"), 10, 64)
		if err1 != nil || err2 != nil {
			l.logger.Warn("republished event without sequence headers", "subject", m.Subject)
			return
		}
		fn(port.LiveRunMsg{RunNo: strings.TrimPrefix(m.Subject, subjLive+"run."), Seq: seq, Prev: prev, Data: m.Data})
	})
	if err != nil {
		return nil, err
	}
	// A dropped message is recovered by gap detection, but never drop early.
	_ = sub.SetPendingLimits(1<<20, 256<<20)
	if err := l.nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	return func() { _ = sub.Unsubscribe() }, nil
}
