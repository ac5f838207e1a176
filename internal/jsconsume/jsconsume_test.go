package jsconsume

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/apprun/apprun/internal/logbuf"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// What a cluster does is info, the rest warn, a closed connection
// nothing; and one error in Every reaches the log.
func TestALoggerSaysWhatAnErrorMeans(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err   error
		level string
		lost  bool
	}{
		{nats.ErrNoResponders, "level=INFO", true},
		{fmt.Errorf("pull: %w", jetstream.ErrConsumerLeadershipChanged), "level=INFO", false},
		{jetstream.ErrConsumerDeleted, "level=WARN", true},
		{jetstream.ErrBadRequest, "level=WARN", true},
		{jetstream.ErrNoHeartbeat, "level=WARN", true},
		{jetstream.ErrConnectionClosed, "", false},
	} {
		var out logbuf.Buffer
		l := NewLogger(slog.New(slog.NewTextHandler(&out, nil)))
		l.Log("consuming", c.err, "consumer", "q")
		l.Log("consuming", c.err, "consumer", "q") // within Every: not logged
		got := out.String()
		switch {
		case c.level == "" && got != "":
			t.Errorf("%v: logged %q", c.err, got)
		case c.level != "" && (!strings.Contains(got, c.level) || strings.Count(got, "\n") != 1 || !strings.Contains(got, "consumer=q")):
			t.Errorf("%v: logged %q, want one line at %s", c.err, got, c.level)
		}
		if Lost(c.err) != c.lost {
			t.Errorf("%v: Lost says %v", c.err, !c.lost)
		}
	}
}
