package projections

import (
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamSeq reads a delivered message's stream sequence from its ack
// subject (reply), the one field of its metadata the applier uses (the
// bench's bare replay reads it the same way, to stay the rebuild's
// ceiling).
// jetstream.Msg.Metadata parses every field and allocates them (about
// 0.2 µs an event of a rebuild's CPU, BENCHMARKS.md fourteenth pass);
// this reads the subject as nats.go's parser does
// (internal/parser.GetMetadataFields), which FuzzStreamSeqAgrees holds it
// to:
//
//	v1: $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<tm>.<pending>
//	v2: $JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<tm>.<pending>[.<token>…]
func StreamSeq(reply string) (uint64, error) {
	const prefix = "$JS.ACK."
	tokens := strings.Count(reply, ".") + 1
	if tokens < 9 || (tokens > 9 && tokens < 11) || !strings.HasPrefix(reply, prefix) {
		return 0, jetstream.ErrNotJSMessage // as Metadata says it
	}
	skip := 3 // <stream>.<consumer>.<delivered>
	if tokens > 9 {
		skip = 5 // <domain>.<account hash> too
	}
	rest := reply[len(prefix):]
	for range skip {
		_, rest, _ = strings.Cut(rest, ".")
	}
	tok, _, _ := strings.Cut(rest, ".")
	return parseNum(tok), nil
}

// parseNum is nats.go's parser.ParseNum: the decimal value of d, 0 when
// d is empty or holds anything but digits.
func parseNum(d string) (n uint64) {
	if len(d) == 0 {
		return 0
	}
	for _, c := range []byte(d) {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint64(c-'0')
	}
	return n
}

// pendingAfter is how many messages the stream held after the message
// whose ack subject is reply when it was delivered (its metadata's
// NumPending); ok is false when reply says nothing.
func pendingAfter(reply string) (n uint64, ok bool) {
	tokens := strings.Split(reply, ".")
	switch {
	case len(tokens) == 9:
		return parseNum(tokens[8]), true
	case len(tokens) >= 11:
		return parseNum(tokens[10]), true
	}
	return 0, false
}
