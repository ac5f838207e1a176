package projections_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/inputschema"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/projections"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/subjects"
	"github.com/apprun/apprun/webhook"
	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"
)

type fixture struct {
	eng  *service.Service
	js   jetstream.JetStream
	path string
}

func setup(t testing.TB) *fixture {
	t.Helper()
	nc := natstest.Connect(t, true)
	app := engine.App{Slug: "a", Name: "a", Price: 1, Runnable: true, InputSchema: []byte(`{"type":"object"}`),
		Executor: engine.Executor(func(context.Context, engine.Job, func(engine.Step)) (engine.Result, error) {
			return engine.Result{Summary: "s"}, nil
		})}
	cat, _ := engine.NewCatalog(inputschema.Compile, app)
	f := &fixture{path: filepath.Join(t.TempDir(), "p.db")}
	// The engine's brand contexts come from a store of its own: these tests
	// open and close the store under test.
	side, err := projections.Open(filepath.Join(t.TempDir(), "side.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { side.Close() })
	st, err := eventlog.Open(context.Background(), nc, eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f.eng, err = service.New(st.Ports(), service.Config{Catalog: cat, Reads: side, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Webhooks: service.WebhookConfig{Sender: webhook.NewSender(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.eng.Stop)
	f.js, _ = jetstream.New(nc)
	return f
}

func (f *fixture) open(t testing.TB) *projections.Store {
	t.Helper()
	s, err := projections.Open(f.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background(), f.js, eventlog.StreamName); err != nil {
		t.Fatal(err)
	}
	return s
}

// waitFor waits until s has applied seq: within 30 s, for the executor
// on a JetStream that fsyncs every write, under a whole suite's load on 2
// cores (10 s ran out once there).
func waitFor(t testing.TB, s *projections.Store, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
}

func TestStoreResumesAfterItsAppliedSequence(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	acct, s := f.openedAccount(t)
	if !s.Ready() {
		t.Fatal("not ready after catching up with the log as it was at Start")
	}
	applied := s.Applied()
	s.Close()

	_, seq, err := f.eng.GrantCredits(ctx, acct.AccountID, 5, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	// The stored sequence, read before the store starts applying (once
	// started it may apply the grant at once).
	s, err = projections.Open(f.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Applied() != applied {
		t.Fatalf("reopened at %d, want the stored %d", s.Applied(), applied)
	}
	if err := s.Start(context.Background(), f.js, eventlog.StreamName); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, seq)
	a, err := s.Account(acct.AccountID)
	if err != nil || a.Balance != 15 || a.Email != "a@example.com" {
		t.Fatalf("account after resuming: %+v %v", a, err)
	}
	k, err := s.KeyByHash(engine.HashKey(acct.APIKey))
	if err != nil || k.AccountID != acct.AccountID || k.Revoked {
		t.Fatalf("key: %+v %v", k, err)
	}
	if _, err := s.KeyByHash(engine.HashKey("ak_other")); err != port.ErrNotFound {
		t.Fatalf("unknown key: %v, want ErrNotFound", err)
	}
}

func TestRunHistoryPages(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	acct, _ := f.eng.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	other, _ := f.eng.OpenAccount(ctx, "b@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	var made []string
	var last uint64
	for i := 0; i < 5; i++ {
		r, err := f.eng.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "a", Input: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		made, last = append(made, r.RunNo), r.Seq
	}
	o, _ := f.eng.CreateRun(ctx, service.CreateRunRequest{AccountID: other.AccountID, KeyID: other.KeyID, AppSlug: "a", Input: map[string]any{}})
	s := f.open(t)
	defer s.Close()
	waitFor(t, s, max(last, o.Seq))
	var got []string
	var cursor uint64
	for {
		page, next, err := s.RunsOf(acct.AccountID, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			got = append(got, r.RunNo)
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	if len(got) != 5 {
		t.Fatalf("history %v, want the account's 5 runs", got)
	}
	for i := range got {
		if got[i] != made[4-i] {
			t.Fatalf("history %v, want newest first of %v", got, made)
		}
	}
}

func TestAFileOfAnotherSchemaIsRebuiltFromTheLog(t *testing.T) {
	f := setup(t)
	acct, err := f.eng.OpenAccount(context.Background(), "a@example.com", 10, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s := f.open(t)
	waitFor(t, s, acct.Seq)
	s.Close()
	db, err := bolt.Open(f.path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bolt.Tx) error {
		_ = tx.DeleteBucket([]byte("account_ledger")) // as an older version left it
		return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), []byte("1"))
	})
	db.Close()
	s = f.open(t)
	defer s.Close()
	if s.Applied() != 0 {
		t.Fatalf("a file of another schema resumed at %d instead of rebuilding", s.Applied())
	}
	waitFor(t, s, acct.Seq)
	lines, _, err := s.Statement(acct.AccountID, 0, 10)
	if err != nil || len(lines) != 1 || lines[0].Amount != 10 {
		t.Fatalf("rebuilt statement %v %v, want the opening grant", lines, err)
	}
}

// Observe sees every message the store applies, once, in order, with its
// sequence and data, and not the ones a reopened store had applied
// before (the engine's admission cache follows other nodes' writes by
// it).
func TestObserveSeesEveryAppliedMessageOnce(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	acct, err := f.eng.OpenAccount(ctx, "o@example.com", 10, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	observe := func(s *projections.Store) *[]port.Message {
		var seen []port.Message
		s.Observe(func(m port.Message) { seen = append(seen, m) })
		return &seen
	}
	s, err := projections.Open(f.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := observe(s)
	if err := s.Start(ctx, f.js, eventlog.StreamName); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, acct.Seq)
	s.Close()
	if n := uint64(len(*first)); n != acct.Seq || (*first)[n-1].Seq != acct.Seq {
		t.Fatalf("observed %d messages (last %+v), want all %d up to the account's", n, (*first)[len(*first)-1], acct.Seq)
	}
	for i, m := range *first {
		if m.Seq != uint64(i+1) || m.Subject == "" || len(m.Data) == 0 {
			t.Fatalf("message %d observed as %+v", i+1, m)
		}
	}

	_, seq, err := f.eng.GrantCredits(ctx, acct.AccountID, 5, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s, err = projections.Open(f.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	again := observe(s)
	if err := s.Start(ctx, f.js, eventlog.StreamName); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, seq)
	if len(*again) != int(seq-acct.Seq) || (*again)[0].Seq != acct.Seq+1 || (*again)[len(*again)-1].Seq != seq {
		t.Fatalf("after reopening: observed %+v, want exactly %d..%d", *again, acct.Seq+1, seq)
	}
}

// A key's use is recorded without a check (engine.TouchKey), so one read
// before a revocation can land after it: the key stays revoked, its last
// use moves on.
func TestAKeyUseRecordedAfterItsRevocationLeavesItRevoked(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	acct, err := f.eng.OpenAccount(ctx, "a@example.com", 10, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.RevokeKey(ctx, acct.KeyID); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	late, _ := json.Marshal(engine.KeyEvent{Type: engine.KeyUsed, V: 1, At: at, KeyID: acct.KeyID, AccountID: acct.AccountID,
		Hash: engine.HashKey(acct.APIKey), Prefix: acct.APIKey[:8]})
	ack, err := f.js.Publish(ctx, subjects.Of(subjects.KindKeyUse, acct.KeyID), late)
	if err != nil {
		t.Fatal(err)
	}
	s := f.open(t)
	defer s.Close()
	waitFor(t, s, ack.Sequence)
	k, err := s.KeyByHash(engine.HashKey(acct.APIKey))
	if err != nil || !k.Revoked || !k.LastUsedAt.Equal(at) {
		t.Fatalf("key after a use recorded past its revocation: %+v %v; want revoked, last used %s", k, err, at)
	}
}

// openedAccount opens an account and a store that applied it.
func (f *fixture) openedAccount(t *testing.T) (service.NewAccount, *projections.Store) {
	t.Helper()
	acct, err := f.eng.OpenAccount(context.Background(), "a@example.com", 10, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s := f.open(t)
	waitFor(t, s, acct.Seq)
	return acct, s
}

// A key-use record only dates a key its creation made: one naming a key
// the log never created (an insider's forgery: the use records are not
// signed) makes no key, and one naming another account moves none.
func TestAKeyUseMakesNoKeyAndMovesNone(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	acct, s := f.openedAccount(t)
	defer s.Close()
	forged := engine.HashKey("ak_known_to_an_insider_0123456789")
	for _, ev := range []engine.KeyEvent{
		{Type: engine.KeyUsed, V: 1, At: time.Now(), KeyID: "key_forged01", AccountID: acct.AccountID, Hash: forged, Prefix: "ak_know"},
		{Type: engine.KeyUsed, V: 1, At: time.Now(), KeyID: acct.KeyID, AccountID: "acct_someoneelse", Hash: engine.HashKey("x"), Prefix: "ak_x"},
	} {
		data, _ := json.Marshal(ev)
		ack, err := f.js.Publish(ctx, subjects.KeyUse(ev.KeyID), data)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, s, ack.Sequence)
	}
	if k, err := s.KeyByHash(forged); err == nil {
		t.Fatalf("a forged key use made a key: %+v", k)
	}
	if k, err := s.KeyByID(acct.KeyID); err != nil || k.AccountID != acct.AccountID {
		t.Fatalf("the account's key after a use naming another account: %+v %v", k, err)
	}
}
