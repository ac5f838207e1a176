// Package audit replays a node's whole event log from its data directory
// (or an external NATS), checks the ledger's invariants and compares the
// result with the read models: what `apprun audit` runs, on a stopped
// node.
package audit

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/apprun/apprun/embednats"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/projections"
	"github.com/apprun/apprun/subjects"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options say where the log and the read models are.
type Options struct {
	// DataDir is the node's data directory (its projections.db, and its
	// embedded store under nats/ unless NATSURL is set).
	DataDir string
	// NATSURL, when set, is the external NATS (or an embedded cluster's
	// client port) to read the log from.
	NATSURL string
	// ClusterSecret authenticates to an embedded cluster's client port.
	ClusterSecret string
	// PublicKey, when set, verifies every account event's signature and
	// link (ledger/chain.go); KeyInDataDir says it is the key a node made
	// in DataDir, which proves nothing against whoever holds DataDir.
	PublicKey    ed25519.PublicKey
	KeyInDataDir bool
	// Checkpoints are checkpoints kept outside the log (apprun ledger
	// checkpoint, GET /api/v1/account/ledger/checkpoint), as exported:
	// the log must still hold what each names. They need PublicKey.
	Checkpoints [][]byte
	// Node, when set, is the base URL of a running node whose read models
	// are compared: the audit takes a snapshot of them through the node's
	// admin API (AdminToken) and never opens the file the node holds; the
	// log is read through NATSURL, which a live audit needs.
	Node, AdminToken string
	// JSON prints the summary as one JSON object (Summary) instead of text.
	JSON bool
	// Account, when set, adds that account's statement as the log gives
	// it, from From (included) to To (excluded; zero: open), to the
	// summary: opening and closing balance, totals, lines.
	Account  string
	From, To time.Time
}

// Summary is what an audit found, as --json prints it.
type Summary struct {
	Events   int    `json:"events"`
	LastSeq  uint64 `json:"last_seq"`
	Accounts int    `json:"accounts"`
	Runs     struct {
		All        int `json:"all"`
		Completed  int `json:"completed"`
		Failed     int `json:"failed"`
		Canceled   int `json:"canceled"`
		Unfinished int `json:"unfinished"`
		Expired    int `json:"expired"`
	} `json:"runs"`
	Credits struct {
		Granted    int64 `json:"granted"`
		Charged    int64 `json:"charged"`
		Refunded   int64 `json:"refunded"`
		Purchased  int64 `json:"purchased"`
		Revoked    int64 `json:"revoked"`
		Adjusted   int64 `json:"adjusted"`
		Disputed   int64 `json:"disputed"`
		Reinstated int64 `json:"reinstated"`
		Owed       int64 `json:"owed"`
	} `json:"credits"`
	// ReadModels says which read models were compared: a stopped node's
	// file, or a running node's snapshot, and through which sequence.
	ReadModels string `json:"read_models"`
	Verified   bool   `json:"signatures_verified"`
	Signed     int    `json:"signed"`
	Unsigned   int    `json:"unsigned"`
	// SignedRecords and UnsignedRecords are the same for prices and keys.
	SignedRecords   int `json:"signed_records"`
	UnsignedRecords int `json:"unsigned_records"`
	Checkpoints     int `json:"checkpoints"`
	// LedgerKept is how many account events, checkpoints and prices the
	// ledger stream keeps (through the replay's end), each checked
	// against the log; -1 when there is no ledger stream.
	LedgerKept   int  `json:"ledger_stream_events"`
	KeyInDataDir bool `json:"key_in_data_dir"`
	// Account is Options.Account's statement, replayed from the log.
	Account *ledger.Statement `json:"account,omitempty"`
	// AccountLines are its lines, oldest first.
	AccountLines []ledger.Line `json:"account_lines,omitempty"`
	// Damage, Violations, Findings, Mismatches and DamagedRecords are the
	// problems, by kind; Passed says there is none.
	Damage         []string `json:"log_damage"`
	Violations     []string `json:"violations"`
	Findings       []string `json:"checkpoint_findings"`
	LedgerCopy     []string `json:"ledger_copy_findings"`
	Mismatches     []string `json:"projection_mismatches"`
	DamagedRecords []string `json:"damaged_projection_records"`
	Passed         bool     `json:"passed"`
}

// Run replays the whole log, checks the ledger invariants, compares with
// the read models, prints a summary to out, and fails on any violation.
// It needs the data directory to itself (the node stopped), or a running
// node's snapshot of its read models (Options.Node) and its log through
// NATS: the replay then ends where the snapshot does.
func Run(ctx context.Context, o Options, out io.Writer) error {
	dir, url := &o.DataDir, &o.NATSURL
	if len(o.Checkpoints) > 0 && o.PublicKey == nil {
		return errors.New("audit: a checkpoint is checked with the ledger's public key: give --public-key (or the signing key)")
	}
	store, damage, cleanup, err := readModels(ctx, o)
	if err != nil {
		return err
	}
	defer cleanup()
	if store != nil {
		defer store.Close()
	}
	var nc *nats.Conn
	if *url != "" {
		var opts []nats.Option
		if o.ClusterSecret != "" {
			opts = append(opts, nats.UserInfo(embednats.User, o.ClusterSecret)) // an embedded cluster's client port
		}
		if nc, err = nats.Connect(*url, opts...); err != nil {
			return fmt.Errorf("audit: connect: %w", err)
		}
	} else {
		ns, err := embednats.New(embednats.Config{StoreDir: filepath.Join(*dir, "nats")})
		if err != nil {
			return err
		}
		if err := ns.Start(); err != nil {
			return err
		}
		defer ns.Stop()
		if nc, err = ns.Connect(); err != nil {
			return err
		}
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var through uint64 // a live node's snapshot: the log as far as it applied it
	if o.Node != "" && store != nil {
		through = store.Applied()
	}
	rep, last, err := replay(ctx, nc, o.PublicKey, o.Checkpoints, *url == "", through)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if store != nil && store.Applied() > last {
		rep.damage = append(rep.damage, fmt.Sprintf("the log is damaged: it ends at sequence %d, but the read models applied it "+
			"through %d: the store lost its tail (a damaged or cut file); restore the data directory from a backup "+
			"(in a cluster, a replica holds it)", last, store.Applied()))
	}
	var mismatches []string
	if readable(store, damage) {
		if mismatches, err = compare(rep, store); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
	}
	sum := summarize(rep, last, o, mismatches, damage)
	if o.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			return err
		}
	} else {
		printSummary(out, rep, last, o, sum, damage)
	}
	if !sum.Passed {
		return errors.New("audit failed")
	}
	return nil
}

// summarize gathers what the audit found.
func summarize(rep report, last uint64, o Options, mismatches []string, damage []projections.Damage) Summary {
	sum := Summary{Events: rep.Events, LastSeq: last, Accounts: len(rep.Accounts), Verified: rep.Verified, Signed: rep.Signed,
		Unsigned: rep.Unsigned, SignedRecords: rep.SignedRecords, UnsignedRecords: rep.UnsignedRecords, Checkpoints: rep.checkpoints, KeyInDataDir: o.KeyInDataDir,
		Damage: nonNil(rep.damage), Violations: nonNil(rep.Violations), Findings: nonNil(rep.findings), Mismatches: nonNil(mismatches),
		LedgerCopy: nonNil(rep.ledgerCopy), LedgerKept: rep.ledgerKept,
		DamagedRecords: []string{}}
	if !rep.ledgerStream {
		sum.LedgerKept = -1
	}
	sum.ReadModels = "the data directory's projections.db"
	if o.Node != "" {
		sum.ReadModels = fmt.Sprintf("a snapshot of %s's, through sequence %d (the log past it is the next audit's)", o.Node, last)
	}
	sum.Runs.All, sum.Runs.Completed, sum.Runs.Failed, sum.Runs.Canceled = len(rep.Runs), rep.Completed, rep.Failed, rep.Canceled
	sum.Runs.Unfinished, sum.Runs.Expired = rep.Active, len(rep.Expired)
	c := &sum.Credits
	c.Granted, c.Charged, c.Refunded, c.Purchased, c.Revoked = rep.Granted, rep.Charged, rep.Refunded, rep.Purchased, rep.Revoked
	c.Adjusted, c.Disputed, c.Reinstated, c.Owed = rep.Adjusted, rep.Disputed, rep.Reinstated, rep.Owed
	for _, d := range damage {
		sum.DamagedRecords = append(sum.DamagedRecords, d.String())
	}
	if o.Account != "" {
		st := ledger.StatementOf(o.Account, rep.lines[o.Account], o.From, o.To)
		sum.Account, sum.AccountLines = &st, nonNil(st.Lines)
	}
	sum.Passed = len(sum.Damage)+len(sum.Violations)+len(sum.Findings)+len(sum.LedgerCopy)+len(sum.Mismatches)+len(sum.DamagedRecords) == 0
	return sum
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// printSummary prints sum as text.
func printSummary(out io.Writer, rep report, last uint64, o Options, sum Summary, damage []projections.Damage) {
	fmt.Fprintf(out, "audit: %d events replayed (last sequence %d)\n", rep.Events, last)
	if o.Node != "" {
		fmt.Fprintf(out, "read models: %s\n", sum.ReadModels)
	}
	fmt.Fprintf(out, "accounts %d, runs %d (completed %d, failed %d (canceled %d), unfinished %d; %d expired after retention)\n",
		len(rep.Accounts), len(rep.Runs), rep.Completed, rep.Failed, rep.Canceled, rep.Active, len(rep.Expired))
	fmt.Fprintf(out, "credits granted %d, charged %d, refunded %d\n", rep.Granted, rep.Charged, rep.Refunded)
	if rep.Disputed != 0 || rep.Owed != 0 {
		fmt.Fprintf(out, "credits taken by disputes %d, given back on disputes won %d, owed on disputes %d\n", rep.Disputed, rep.Reinstated, rep.Owed)
	}
	if rep.Adjusted != 0 {
		fmt.Fprintf(out, "credits adjusted by operators %+d\n", rep.Adjusted)
	}
	if rep.Purchases > 0 {
		fmt.Fprintf(out, "credits purchased %d in %d payments, revoked on refunds %d\n", rep.Purchased, rep.Purchases, rep.Revoked)
	}
	if rep.Fenced > 0 {
		fmt.Fprintf(out, "admissions fenced off (never runs, never charged) %d\n", rep.Fenced)
	}
	switch {
	case !rep.Verified:
		fmt.Fprintln(out, "signatures: not verified (no public key: --public-key, or the signing key)")
	default:
		fmt.Fprintf(out, "signatures: %d account events signed and linked, %d written before the ledger was signed\n", rep.Signed, rep.Unsigned)
		fmt.Fprintf(out, "  prices and keys: %d signed and linked, %d written before they were signed\n", rep.SignedRecords, rep.UnsignedRecords)
		fmt.Fprintf(out, "checkpoints: %d in the log, %d kept outside it, checked\n", rep.checkpoints, len(o.Checkpoints))
		if o.KeyInDataDir {
			fmt.Fprintln(out, "  (verified with the key in the data directory: whoever can write the directory could have signed; keep the public key elsewhere and pass --public-key)")
		}
	}
	if rep.ledgerStream {
		fmt.Fprintf(out, "ledger stream: %d account events, checkpoints and prices kept, each checked against the log\n", rep.ledgerKept)
	} else {
		fmt.Fprintln(out, "ledger stream: none (a log written before it; the next apprun serve makes it)")
	}
	if st := sum.Account; st != nil {
		fmt.Fprintf(out, "account %s, as the log gives it: opening balance %d, %d lines, closing balance %d; totals %v\n",
			st.AccountID, st.OpeningBalance, len(st.Lines), st.ClosingBalance, st.Totals)
	}
	if len(sum.Damage) > 0 {
		fmt.Fprintf(out, "LOG DAMAGED: %s\n", sum.Damage[0])
	}
	fmt.Fprintf(out, "invariant violations %d, checkpoint findings %d, ledger stream findings %d, projection mismatches %d, damaged projection records %d\n",
		len(sum.Violations), len(sum.Findings), len(sum.LedgerCopy), len(sum.Mismatches), len(damage))
	for _, list := range [][]string{sum.Damage, sum.Violations, sum.Findings, sum.LedgerCopy, sum.Mismatches} {
		for _, p := range list {
			fmt.Fprintln(out, "  -", p)
		}
	}
	for _, d := range damage {
		fmt.Fprintln(out, "  - damaged projection: "+d.String())
	}
	if len(damage) > 0 {
		fmt.Fprintln(out, "the log is the truth: `apprun serve` moves a damaged projections.db aside and rebuilds it from the log at its next start")
	}
}

// replay feeds every message of the stream, in order, to an Audit. It reads
// in bounded fetches and, after any error (a leader election in a
// cluster), starts again after the last message read; it fails rather than
// wait forever when no progress is made for auditStall.
// With still (a stopped node's store, which nothing else writes), every
// message the store counts must be read.
//
// through, when not 0, ends the replay there (a live node's snapshot of
// its read models applied the log that far; the log goes on meanwhile).
func replay(ctx context.Context, nc *nats.Conn, pub ed25519.PublicKey, exported [][]byte, still bool, through uint64) (report, uint64, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return report{}, 0, err
	}
	var st jetstream.Stream
	sctx, cancel := context.WithTimeout(ctx, auditStall)
	defer cancel()
	err = port.Retry(sctx, nil, "read the stream", func(ctx context.Context) error {
		st, err = js.Stream(ctx, eventlog.StreamName)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return report{}, 0, err
	}
	if st == nil {
		// A clean audit of nothing is the worst answer: a wrong --data, a
		// cluster member opened without its cluster, a foreign directory.
		return report{}, 0, errors.New("no event log found (no " + eventlog.StreamName + " stream): nothing to audit; check --data, or --nats-url for a log on another server")
	}
	state := st.CachedInfo().State
	last := state.LastSeq
	if through > 0 && through < last {
		last = through
	}
	if last == 0 {
		return report{}, 0, errors.New("the event log is empty: nothing to audit")
	}
	a := engine.NewAudit(pub)
	rep := report{lines: map[string][]ledger.Line{}, damage: lostData(state.Lost)}
	lc, err := readLedgerCopy(ctx, js, last)
	if err != nil {
		return report{}, 0, err
	}
	var cps *ledger.Checkpoints
	if pub != nil {
		cps = ledger.NewCheckpoints(pub)
		for _, data := range exported {
			if err := cps.ExpectExported(data); err != nil {
				rep.findings = append(rep.findings, err.Error())
			}
		}
		if rep.checkpoints, err = expectLogged(ctx, st, cps, last); err != nil {
			return report{}, 0, err
		}
	}
	var read, delivered uint64
	progress := time.Now()
	for read < last {
		if time.Since(progress) > auditStall {
			return report{}, 0, fmt.Errorf("no progress for %s at sequence %d of %d", auditStall, read, last)
		}
		n, err := fetchFrom(ctx, st, "", read+1, last, func(seq uint64, m jetstream.Msg) {
			subject, data := m.Subject(), m.Data()
			a.Apply(subject, seq, data)
			rep.ledgerMessage(cps, lc, subject, seq, data)
			read = seq
			delivered++
		})
		if n > 0 {
			progress = time.Now()
		}
		if err != nil && ctx.Err() != nil {
			return report{}, 0, err
		}
		if err == nil && n == 0 {
			// Nothing left to read: done, if the last sequence is a hole
			// (a purged message) rather than a message still to come.
			gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, gerr := st.GetMsg(gctx, last)
			cancel()
			if errors.Is(gerr, jetstream.ErrMsgNotFound) {
				break
			}
		}
		if err != nil || n == 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	end := state.LastSeq
	if through > 0 {
		// The log as it is now, after the replay: a run that expired while
		// the audit ran (the retention sweep writes the marker, then
		// purges) may have lost its events from the replay.
		if info, err := st.Info(ctx); err == nil {
			end = info.State.LastSeq
		}
	}
	if through > 0 && through < end {
		// A run that expired after the snapshot (the retention sweep) may
		// have lost its events from the replay as it went: its marker,
		// past the snapshot, stands for them.
		if _, err := fetchFrom(ctx, st, subjects.ExpiredPrefix+"*", through+1, end, func(seq uint64, m jetstream.Msg) {
			a.Apply(m.Subject(), seq, m.Data())
		}); err != nil {
			return report{}, 0, fmt.Errorf("read the runs expired since the snapshot: %w", err)
		}
	}
	if still && delivered < state.Msgs && len(rep.damage) == 0 {
		rep.damage = append(rep.damage, fmt.Sprintf("the log is damaged: its store counts %d messages through sequence %d, "+
			"but %d could not be read back from its files (%d could): damaged or gone, and what follows from them is the damage's, "+
			"not the ledger's: restore the data directory from a backup (in a cluster, a replica holds them)",
			state.Msgs, last, state.Msgs-delivered, delivered))
	}
	rep.AuditReport = a.Report()
	if lc != nil {
		rep.ledgerCopy, rep.ledgerKept, rep.ledgerStream = lc.left(), lc.kept, true
	}
	if cps != nil {
		rep.findings = append(rep.findings, cps.End(last)...)
	}
	return rep, last, nil
}

// report is what the replay found: the audit's report, and the
// checkpoints' findings.
type report struct {
	engine.AuditReport
	checkpoints int // in the log
	findings    []string
	// damage is what the store says it lost (lostData).
	damage []string
	// ledgerCopy are the ledger stream's findings (ledgercopy.go), of the
	// ledgerKept messages it keeps; ledgerStream says there is one.
	ledgerCopy   []string
	ledgerKept   int
	ledgerStream bool
	// lines are each account's statement as the log gives it, oldest
	// first: the read models' must be the same.
	lines map[string][]ledger.Line
}

// expectLogged reads the checkpoints the log holds through last, before
// the log itself: their heads are then checked as the log goes by.
func expectLogged(ctx context.Context, st jetstream.Stream, cps *ledger.Checkpoints, last uint64) (int, error) {
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	newest, err := st.GetLastMsgForSubject(gctx, subjects.Checkpoint)
	cancel()
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the newest checkpoint: %w", err)
	}
	until := min(newest.Sequence, last)
	n := 0
	var read uint64
	for read < until {
		got, err := fetchFrom(ctx, st, subjects.Checkpoint, read+1, until, func(seq uint64, m jetstream.Msg) {
			cps.Expect(seq, m.Data())
			n, read = n+1, seq
		})
		if err != nil {
			return 0, fmt.Errorf("read the checkpoints: %w", err)
		}
		if got == 0 {
			break
		}
	}
	return n, nil
}

// lostData describes what the store says it lost: messages it could not
// read back from its files (a damaged block). The findings that follow
// (drift, broken links) are then this damage's, not the ledger's.
func lostData(lost *jetstream.LostStreamData) []string {
	if lost == nil || len(lost.Msgs) == 0 {
		return nil
	}
	seqs := lost.Msgs
	shown := fmt.Sprint(seqs)
	if len(seqs) > 20 {
		shown = fmt.Sprintf("%v … %d", seqs[:20], seqs[len(seqs)-1])
	}
	return []string{fmt.Sprintf("the log is damaged: its store lost %d messages (%d bytes) it could not read back from its files, "+
		"at sequences %s; what follows from them is the damage's, not the ledger's: restore the data directory from a backup "+
		"(in a cluster, a replica holds them)", len(seqs), lost.Bytes, shown)}
}

// ledgerMessage takes a message of the log for the statements and, with
// the ledger's key, the checkpoints' check (cps).
func (r *report) ledgerMessage(cps *ledger.Checkpoints, lc *ledgerCopy, subject string, seq uint64, data []byte) {
	if cps != nil {
		cps.Reached(seq - 1)
	}
	kind, id := subjects.Parse(subject)
	if lc != nil && (kind == subjects.KindAccount || kind == subjects.KindPrice || subject == subjects.Checkpoint) {
		lc.see(seq, subject, data)
	}
	switch {
	case kind == subjects.KindAccount:
		var ev ledger.Event
		if json.Unmarshal(data, &ev) != nil {
			return // an unreadable event is the audit's finding
		}
		if line, ok := ledger.LineOf(ev, seq, data); ok {
			r.lines[id] = append(r.lines[id], line)
		}
		if cps != nil {
			cps.Event(seq, data, ev)
		}
	case subject == subjects.Checkpoint && cps != nil:
		cps.Logged(seq, data)
	}
}

// eventType is the type a message of the log says it is ("" if none).
func eventType(data []byte) string {
	var ev struct{ Type string }
	_ = json.Unmarshal(data, &ev)
	return ev.Type
}

// auditStall is how long the audit waits for the log without progress.
const auditStall = 30 * time.Second

// fetchFrom reads messages (on filter, when set) from sequence `from`
// through `last` with one ordered consumer, and returns how many it read.
//
// One consumer for the whole read, pulled as an iterator, not fetched: an
// ordered consumer's Fetch deletes and makes its consumer again before
// every batch, retrying the making without end and out of any context's
// reach; after a 30-minute soak on a cluster the audit sat there for good
// (issue 50). The iterator makes its consumer again only when it lost it,
// at most fetchResets times, and ctx stops it.
func fetchFrom(ctx context.Context, st jetstream.Stream, filter string, from, last uint64, apply func(uint64, jetstream.Msg)) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var filters []string
	if filter != "" {
		filters = []string{filter}
	}
	cons, err := st.OrderedConsumer(cctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: filters,
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy, OptStartSeq: from,
		InactiveThreshold: projections.ConsumerIdle, MaxResetAttempts: fetchResets})
	if err != nil {
		return 0, err
	}
	if info := cons.CachedInfo(); info != nil && info.NumPending == 0 {
		return 0, nil // nothing there: no need to wait for it
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(500))
	if err != nil {
		return 0, err
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop) // also ends a wait to make the consumer again
	defer stop()
	n := 0
	for {
		m, err := it.Next(jetstream.NextMaxWait(2 * time.Second))
		switch {
		case errors.Is(err, nats.ErrTimeout):
			return n, nil // nothing within the wait: let the caller decide
		case err != nil && ctx.Err() != nil:
			return n, ctx.Err()
		case err != nil:
			return n, err
		}
		md, err := m.Metadata()
		if err != nil {
			return n, err
		}
		if md.Sequence.Stream > last {
			return n, nil // past the end asked for (a hole ended it)
		}
		apply(md.Sequence.Stream, m)
		n++
		if md.Sequence.Stream >= last {
			return n, nil
		}
	}
}

// fetchResets is how many times a read makes its consumer again after
// losing it (a server gone, a leader elected) before it gives up: the
// audit's own loop then starts a new read, within auditStall.
const fetchResets = 3

// readable says whether the read models can be compared with the log: the
// file opened and its pages are sound (damaged records are skipped).
func readable(store *projections.Store, damage []projections.Damage) bool {
	if store == nil {
		return false
	}
	for _, d := range damage {
		if d.Bucket == "" {
			return false
		}
	}
	return true
}

// compare checks the read models against what the log says. A record
// that is damaged is left to the damage findings.
func compare(rep report, store *projections.Store) ([]string, error) {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(rep.lines)) {
		diff, err := compareStatement(id, rep.lines[id], store)
		if err != nil {
			return nil, err
		}
		out = append(out, diff...)
	}
	for _, id := range slices.Sorted(maps.Keys(rep.Accounts)) {
		want := rep.Accounts[id]
		got, err := store.Account(id)
		switch {
		case errors.Is(err, port.ErrNotFound):
			out = append(out, fmt.Sprintf("account %s: missing from the read model", id))
		case errors.Is(err, projections.ErrDamaged):
		case err != nil:
			return nil, err
		case got.Balance != want.Balance || got.Active != want.Active:
			out = append(out, fmt.Sprintf("account %s: read model has balance %d active %d, the log %d and %d", id, got.Balance, got.Active, want.Balance, want.Active))
		}
	}
	for no, status := range rep.Runs {
		if rep.Expired[no] {
			continue // removed from the read models with its log
		}
		got, err := store.Run(no)
		switch {
		case errors.Is(err, port.ErrNotFound):
			out = append(out, fmt.Sprintf("run %s: missing from the read model", no))
		case errors.Is(err, projections.ErrDamaged):
		case err != nil:
			return nil, err
		case got.Status != status:
			out = append(out, fmt.Sprintf("run %s: read model says %s, the log %s", no, got.Status, status))
		}
	}
	sort.Strings(out)
	return out, nil
}

// statementPage is how many lines compareStatement reads at a time.
const statementPage = 1000

// compareStatement checks an account's statement in the read models
// against the lines the log gives (want, oldest first), and names the
// first that differs.
func compareStatement(id string, want []ledger.Line, store *projections.Store) ([]string, error) {
	var got []ledger.Line // newest first
	for before := uint64(0); ; {
		page, next, err := store.Statement(id, before, statementPage)
		if errors.Is(err, projections.ErrDamaged) {
			return nil, nil // the damage findings say so
		}
		if err != nil {
			return nil, err
		}
		got = append(got, page...)
		if next == 0 {
			break
		}
		before = next
	}
	slices.Reverse(got)
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			return []string{fmt.Sprintf("account %s: statement lacks the log's line %d (%s %d at %s)", id, i+1, want[i].Type, want[i].Amount, want[i].At.Format(time.RFC3339Nano))}, nil
		case i >= len(want):
			return []string{fmt.Sprintf("account %s: statement line %d (%s %d at %s) is not in the log", id, i+1, got[i].Type, got[i].Amount, got[i].At.Format(time.RFC3339Nano))}, nil
		case !sameLine(got[i], want[i]):
			return []string{fmt.Sprintf("account %s: statement line %d says %s; the log says %s", id, i+1, lineText(got[i]), lineText(want[i]))}, nil
		}
	}
	return nil, nil
}

// lineText is what compareStatement compares of a line, to name a
// difference.
func lineText(l ledger.Line) string {
	s := fmt.Sprintf("%s %d (balance %d) at %s", l.Type, l.Amount, l.Balance, l.At.Format(time.RFC3339Nano))
	if l.RunNo != "" || l.AppSlug != "" {
		s += fmt.Sprintf(", run %s of %s", l.RunNo, l.AppSlug)
	}
	if !l.PriceAt.IsZero() {
		s += ", price_at " + l.PriceAt.Format(time.RFC3339Nano)
	}
	if l.Reference != "" {
		s += ", reference " + l.Reference
	}
	return s
}

func sameLine(a, b ledger.Line) bool {
	return a.Type == b.Type && a.Amount == b.Amount && a.RunNo == b.RunNo && a.AppSlug == b.AppSlug && a.PriceAt.Equal(b.PriceAt) &&
		a.At.Equal(b.At) && a.Balance == b.Balance && a.Reference == b.Reference
}
