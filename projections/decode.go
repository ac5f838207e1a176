package projections

import (
	gojson "github.com/goccy/go-json"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/subjects"
	"github.com/nats-io/nats.go/jetstream"
)

// event is one message of the log, its account or run event decoded where
// it arrives (the consumer's goroutine), so that the applier's transaction
// only applies: a rebuild decodes and writes on two cores at once. They
// are decoded with goccy/go-json, which decodes these events in about half
// the time encoding/json takes; FuzzDecodersAgree holds it to
// encoding/json. A message it cannot decode is decoded again by
// encoding/json in apply, which reports what is wrong with it.
type event struct {
	subject string
	seq     uint64
	data    []byte
	kind    subjects.Kind
	id      string
	// decoded: an account's ledger event or a run's event (nil for the
	// other kinds, which apply decodes itself).
	acct *ledger.Event
	run  *engine.RunEvent
	// reply is the message's ack subject, which also says how many
	// messages the stream holds after it (pendingAfter).
	reply string
	// err: the message's metadata could not be read.
	err error
}

func decodeMsg(m jetstream.Msg) event {
	ev := event{subject: m.Subject(), data: m.Data(), reply: m.Reply()}
	seq, err := StreamSeq(ev.reply)
	if err != nil {
		ev.err = err
		return ev
	}
	ev.seq = seq
	ev.kind, ev.id = subjects.Parse(ev.subject)
	switch ev.kind {
	case subjects.KindAccount:
		var a ledger.Event
		if gojson.Unmarshal(ev.data, &a) == nil {
			ev.acct = &a
		}
	case subjects.KindRun:
		if r, err := engine.DecodeRunEventWith(gojson.Unmarshal, ev.data); err == nil {
			ev.run = &r
		}
	}
	return ev
}
