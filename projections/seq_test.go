package projections

import (
	"testing"

	"github.com/nats-io/nats.go"
)

// StreamSeq reads the stream sequence of an ack subject as nats.go's own
// metadata parser does: the same sequence for every subject it reads, an
// error for every subject it refuses.
func FuzzStreamSeqAgrees(f *testing.F) {
	for _, s := range []string{
		"$JS.ACK.APPRUN.c1.1.42.42.1764000000000000000.0",                     // v1
		"$JS.ACK._.ACCHASH.APPRUN.c1.1.42.43.1764000000000000000.7.zx9",       // v2
		"$JS.ACK.hub.ACCHASH.APPRUN.c1.3.18446744073709551615.1.1.0.tok.more", // v2, a domain, more tokens
		"$JS.ACK.hub.ACCHASH.APPRUN.c1.1.99.1.1.0",                            // v2 without its last token
		"$JS.ACK.APPRUN.c1.1.4x2.42.1.0", "$JS.ACK.APPRUN.c1.1..42.1.0",       // not a number
		"$JS.ACK.APPRUN.c1.1.42.42.1", "$JS.ACK.a.b.c.d.e.f.g.h.i", "_INBOX.x.1.2.3.4.5.6.7", // refused
		"$JS.ACK.APPRUN.c1.1.٤٢.42.1.0", "", "$JS.ACK.",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		got, err := StreamSeq(reply)
		meta, werr := (&nats.Msg{Sub: &nats.Subscription{}, Reply: reply}).Metadata()
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: StreamSeq %d (%v), nats.go %v", reply, got, err, werr)
		}
		if werr == nil && got != meta.Sequence.Stream {
			t.Fatalf("%q: StreamSeq %d, nats.go %d", reply, got, meta.Sequence.Stream)
		}
	})
}
