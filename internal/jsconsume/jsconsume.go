// Package jsconsume says what an error a JetStream Consume reports (to its
// ConsumeErrHandler) means to the node consuming: nothing (the connection
// closed: the node is stopping), what a cluster does (logged at info), a
// consumption lost (made again by the work queues; the read models'
// ordered consumer makes it again by itself), or something else (warn).
// The work queues and the read models log them alike through Logger.
package jsconsume

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"
)

// Closing reports an error that only says the connection closed.
func Closing(err error) bool { return errors.Is(err, jetstream.ErrConnectionClosed) }

// Usual reports what a cluster does: a pull nobody answers is a new
// consumer's first milliseconds, before it has a leader, and a leadership
// change follows a lost node.
func Usual(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrConsumerLeadershipChanged)
}

// Lost reports a consumption that must be made again: nats.go ended it
// (the consumer deleted, a pull refused), or the server no longer serves
// it (missed heartbeats, a pull nobody answers).
func Lost(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrBadRequest) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) || errors.Is(err, nats.ErrNoResponders)
}

// Every is how often a Logger lets an error through.
const Every = 5 * time.Second

// Logger logs a Consume's errors, at most one in Every: at info what a
// cluster does (Usual), at warn the rest; never Closing.
type Logger struct {
	logger *slog.Logger
	logs   rate.Sometimes
}

func NewLogger(logger *slog.Logger) *Logger {
	return &Logger{logger: logger, logs: rate.Sometimes{Interval: Every}}
}

// Log logs err with msg and attrs, unless one was logged less than Every
// ago.
func (l *Logger) Log(msg string, err error, attrs ...any) {
	if Closing(err) {
		return
	}
	l.logs.Do(func() {
		level := slog.LevelWarn
		if Usual(err) {
			level = slog.LevelInfo
		}
		l.logger.Log(context.Background(), level, msg, append(attrs, "err", err)...)
	})
}
