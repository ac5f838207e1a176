package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
)

// RecordVersion is the version of the run record document.
const RecordVersion = 1

// RunRecord is one run's record as a self-contained document (GET
// /api/v1/runs/{run_no}/record, `apprun runs export`): the run, what it
// was made from (its record head, whose hash its charge keeps), each
// recorded step of its last execution, every message of its log with its
// sequence, and its ledger lines with their hashes (and signatures, when
// the ledger is signed).
type RunRecord struct {
	RecordVersion int        `json:"record_version"`
	Run           engine.Run `json:"run"`
	// Head is what the run was charged for; HeadHash its hash, which the
	// charge's ledger line holds as "record".
	Head     engine.RecordHead `json:"head"`
	HeadHash string            `json:"head_hash"`
	// Model is the model the run asked for ("": the node's); RerunOf the
	// run it reruns, and RerunChanges what it changed.
	Model        string   `json:"model,omitempty"`
	RerunOf      string   `json:"rerun_of,omitempty"`
	RerunChanges []string `json:"rerun_changes,omitempty"`
	// BrandContextID is the brand context the run named (its content, as
	// used, is in the start step).
	BrandContextID string `json:"brand_context_id,omitempty"`
	// Steps are the record's entries of the run's last execution (one
	// that was interrupted and executed again starts anew), in order.
	Steps []RecordStep `json:"steps"`
	// Tokens sums the model steps' usage (nil: no model step reported any).
	Tokens *engine.TokenUsage `json:"tokens,omitempty"`
	// Events are every message of the run's log, as stored.
	Events []RecordEvent `json:"events"`
	// Ledger are the account's lines of this run: its charge, and its
	// refund when it failed.
	Ledger []RecordLine `json:"ledger"`
}

// RecordStep is one record entry with the sequence of its event.
type RecordStep struct {
	Seq uint64 `json:"seq"`
	engine.RecordEntry
}

// RecordEvent is one message of a run's log: its sequence and its JSON.
type RecordEvent struct {
	Seq  uint64          `json:"seq"`
	Data json.RawMessage `json:"data"`
}

// RecordLine is a ledger line with the chain's prev and signature of
// its event.
type RecordLine struct {
	ledger.Line
	Prev string `json:"prev,omitempty"`
	Sig  string `json:"sig,omitempty"`
}

// RunRecord reads an account's run's record from the log. A run of
// another account, or one gone with its retention, is run_not_found.
func (s *Service) RunRecord(ctx context.Context, accountID, runNo string) (RunRecord, error) {
	rec, err := s.runRecord(ctx, runNo)
	if err == nil && rec.Run.AccountID != accountID {
		err = engine.Errorf(engine.CodeRunNotFound, "no run %q", runNo)
	}
	return rec, err
}

// RunRecordAdmin is RunRecord for the operator: any account's run.
func (s *Service) RunRecordAdmin(ctx context.Context, runNo string) (RunRecord, error) {
	return s.runRecord(ctx, runNo)
}

func (s *Service) runRecord(ctx context.Context, runNo string) (RunRecord, error) {
	notFound := engine.Errorf(engine.CodeRunNotFound, "no run %q", runNo)
	if !engine.ValidID(engine.PrefixRun, runNo) {
		return RunRecord{}, notFound
	}
	rec := newRunRecord()
	err := s.ports.Log.Read(ctx, subjects.Run(runNo), 0, func(m port.Message) error {
		return rec.add(m.Seq, m.Data)
	})
	switch {
	case errors.Is(err, errNoRun) || err == nil && len(rec.Events) == 0:
		return RunRecord{}, notFound
	case err != nil:
		return RunRecord{}, internal("read run", err)
	}
	rec.sumTokens()
	if rec.Ledger, err = s.runLines(ctx, rec.Run); err != nil {
		return RunRecord{}, internal("read the run's ledger lines", err)
	}
	return *rec, nil
}

func newRunRecord() *RunRecord {
	return &RunRecord{RecordVersion: RecordVersion, Steps: []RecordStep{}, Events: []RecordEvent{}, Ledger: []RecordLine{}}
}

// add folds the run's message at seq into the record.
func (rec *RunRecord) add(seq uint64, data []byte) error {
	ev, err := engine.DecodeRunEvent(data)
	if err != nil {
		return err
	}
	if len(rec.Events) == 0 && ev.Type != engine.RunCreated {
		return errNoRun
	}
	rec.Events = append(rec.Events, RecordEvent{Seq: seq, Data: json.RawMessage(data)})
	rec.Run = engine.ApplyRun(rec.Run, ev, seq)
	switch ev.Type {
	case engine.RunCreated:
		c := ev.Created
		rec.Head = engine.HeadOf(ev.RunNo, c)
		rec.HeadHash = rec.Head.Hash()
		rec.Model, rec.RerunOf, rec.RerunChanges, rec.BrandContextID = c.Model, c.RerunOf, c.RerunChanges, c.BrandContextID
	case engine.RunRecorded:
		if e := ev.Recorded.Entry; e != nil {
			if e.Kind == engine.RecordStart {
				rec.Steps = rec.Steps[:0] // executed again: its record starts anew
			}
			rec.Steps = append(rec.Steps, RecordStep{Seq: seq, RecordEntry: *e})
		}
	}
	return nil
}

func (rec *RunRecord) sumTokens() {
	for _, st := range rec.Steps {
		if u := st.Usage; u != nil {
			if rec.Tokens == nil {
				rec.Tokens = &engine.TokenUsage{}
			}
			rec.Tokens.Prompt += u.Prompt
			rec.Tokens.Completion += u.Completion
			rec.Tokens.Total += u.Total
		}
	}
}

// RecordFromEvents rebuilds a record from the log messages a document
// holds (an export), as RunRecord builds it from the log: what a replay
// of a file trusts, not the document's other members, which a reader
// could edit apart from them. It checks that the charge among lines
// keeps the head's hash.
func RecordFromEvents(events []RecordEvent, lines []RecordLine) (RunRecord, error) {
	rec := newRunRecord()
	for _, ev := range events {
		if err := rec.add(ev.Seq, ev.Data); err != nil {
			return RunRecord{}, fmt.Errorf("event %d: %w", ev.Seq, err)
		}
	}
	if len(rec.Events) == 0 {
		return RunRecord{}, errors.New("the document holds no event of its run")
	}
	rec.sumTokens()
	rec.Ledger = append(rec.Ledger, lines...)
	for _, l := range lines {
		if l.Type == "charge" && l.RunNo == rec.Run.RunNo && l.Record != "" && l.Record != rec.HeadHash {
			return RunRecord{}, fmt.Errorf("the charge (seq %d) was for a record head %s, not this run's %s", l.Seq, l.Record, rec.HeadHash)
		}
	}
	return *rec, nil
}

var errNoRun = errors.New("service: not a run's log")

// linesNear is how far before a run's write its account event can be:
// the account's event leads the write's batch (admission.go, endwrite.go).
const linesNear = 16

// runLines are the account's ledger lines of run: read near its created
// event (the charge) and its last (a refund), in the same atomic writes.
func (s *Service) runLines(ctx context.Context, run engine.Run) ([]RecordLine, error) {
	out := []RecordLine{}
	seen := map[uint64]bool{}
	for _, at := range []uint64{run.CreatedSeq, run.LastSeq} {
		if at == 0 {
			continue
		}
		from := uint64(0)
		if at > linesNear {
			from = at - linesNear
		}
		err := s.ports.Log.Read(ctx, subjects.Account(run.AccountID), from, func(m port.Message) error {
			if m.Seq > at {
				return errStopRead
			}
			var ev ledger.Event
			if json.Unmarshal(m.Data, &ev) != nil || ev.RunNo != run.RunNo || seen[m.Seq] {
				return nil
			}
			if line, ok := ledger.LineOf(ev, m.Seq, m.Data); ok {
				seen[m.Seq] = true
				out = append(out, RecordLine{Line: line, Prev: ev.Prev, Sig: ev.Sig})
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopRead) {
			return nil, err
		}
	}
	return out, nil
}

var errStopRead = errors.New("service: read far enough")
