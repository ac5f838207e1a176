package embednats

import (
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
)

// serverLog hands the embedded server's log to apprun's: its warnings and
// errors are an operator's only sight of what the substrate met (a disk
// that filled, a route that dropped, a stream that lost its leader); its
// notices (start-up, listening, each route connected) are chatter on a
// node that runs it inside, kept at debug level. Debug and trace stay off.
//
// It also notes the first error after which the server's store takes no
// more writes until the server restarts (storeFailed): a stream's or a
// consumer's write error, which nats-server keeps for good, or JetStream
// shut down for want of space or permission.
type serverLog struct {
	l *slog.Logger
	// failed, when not nil, is where a store failure is noted; nil on a
	// cluster member, whose streams another member takes over.
	failed *atomic.Pointer[string]
}

func (s serverLog) Noticef(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s serverLog) Debugf(string, ...any)           {}
func (s serverLog) Tracef(string, ...any)           {}

func (s serverLog) Warnf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	s.note(msg)
	if strings.HasPrefix(msg, "Plaintext passwords detected") {
		// Said at every start with a secret: the server's configuration
		// is text built in memory from APPRUN_CLUSTER_SECRET, never a
		// file where a password could be read.
		s.l.Debug(msg)
		return
	}
	s.l.Warn(msg)
}

func (s serverLog) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	s.note(msg)
	s.l.Error(msg)
}

func (s serverLog) Fatalf(format string, v ...any) { s.Errorf(format, v...) }

// note keeps msg when it says the store takes no more writes. The
// server's words are the only sign it gives (nats-server 2.15: its health
// check skips a stream of one replica); TestAFullDiskTakesTheNodeOutOfServiceUntilItRestarts
// holds them.
func (s serverLog) note(msg string) {
	if s.failed != nil && storeFailure(msg) {
		s.failed.CompareAndSwap(nil, &msg)
	}
}

func storeFailure(msg string) bool {
	return strings.Contains(msg, "' critical write error: ") || // a stream, a consumer, the meta group
		strings.Contains(msg, "will be DISABLED") || strings.Contains(msg, "disabling JetStream")
}
