package eventlog

import (
	"context"
	"slices"

	"github.com/apprun/apprun/subjects"
	"github.com/nats-io/nats.go/jetstream"
)

// LedgerStreamName is the stream that keeps the ledger: a copy, made by
// the server itself (a stream source), of every account event, checkpoint
// and price of the event log, in order. The event log cannot refuse
// deletes and purges: run retention purges runs' subjects, and an
// admission's charge and run are one atomic write, so they share its
// stream. The ledger stream refuses both through the NATS API
// (deny_delete, deny_purge, no rollups), and its copy outlives whatever
// is removed from the log: the audit compares the two. Run retention
// never touches it.
const LedgerStreamName = "APPRUN_LEDGER"

// ledgerSubjects are the event log's subjects the ledger stream keeps.
func ledgerSubjects() []string {
	return []string{subjects.AccountPrefix + "*", subjects.Checkpoint, subjects.PricePrefix + "*"}
}

// ledgerConfig is the ledger stream's configuration. Its deny flags
// cannot be lifted once set (nats-server refuses), which is the point.
func ledgerConfig(cfg Config) jetstream.StreamConfig {
	source := &jetstream.StreamSource{Name: StreamName}
	for _, s := range ledgerSubjects() {
		// No destination: each is kept on its own subject.
		source.SubjectTransforms = append(source.SubjectTransforms, jetstream.SubjectTransformConfig{Source: s})
	}
	return jetstream.StreamConfig{
		Name:        LedgerStreamName,
		Description: "apprun ledger: the event log's account events, checkpoints and prices, copied by the server; refuses deletes and purges",
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		Sources:     []*jetstream.StreamSource{source},
		DenyDelete:  true,
		DenyPurge:   true,
		AllowDirect: true,
	}
}

// ensureLedger creates the ledger stream, or checks the one there.
func ensureLedger(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, error) {
	return ensureStream(ctx, js, ledgerConfig(cfg))
}

// sameSources reports whether a stream's sources are the wanted ones.
func sameSources(have, want []*jetstream.StreamSource) bool {
	return slices.EqualFunc(have, want, func(a, b *jetstream.StreamSource) bool {
		return a.Name == b.Name && a.FilterSubject == b.FilterSubject && slices.Equal(a.SubjectTransforms, b.SubjectTransforms)
	})
}
