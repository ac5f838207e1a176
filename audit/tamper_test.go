package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/audit"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	. "github.com/apprun/apprun/node/nodetest"
	"github.com/apprun/apprun/subjects"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// An insider with the log's credentials but not the ledger's key: a
// grant they publish, balance-consistent and at the expected sequence,
// and events they delete from the middle of an account, are each found
// by the audit, which names the event; the untampered log passes.
func TestTheAuditFindsAForgedGrantAndAnEventRemovedFromTheMiddle(t *testing.T) {
	t.Parallel()
	for _, tamper := range []struct {
		name string
		do   func(t *testing.T, ctx context.Context, st jetstream.Stream, js jetstream.JetStream, account string)
		want string
	}{
		{"a grant forged with the NATS credentials", forgeGrant, "(credits_granted): ledger: the event is not signed"},
		{"a failed run's charge and refund deleted", func(t *testing.T, ctx context.Context, st jetstream.Stream, js jetstream.JetStream, account string) {
			// The account's events: opened, grant, 3 charges with their
			// settles and the failed run's refund. Delete the last charge
			// and its refund, then the grant after them stands unlinked.
			var seqs []uint64
			cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subjects.Account(account)}})
			if err != nil {
				t.Fatal(err)
			}
			batch, err := cons.FetchNoWait(100)
			if err != nil {
				t.Fatal(err)
			}
			var types []ledger.EventType
			for m := range batch.Messages() {
				var ev ledger.Event
				_ = json.Unmarshal(m.Data(), &ev)
				md, _ := m.Metadata()
				seqs, types = append(seqs, md.Sequence.Stream), append(types, ev.Type)
			}
			n := len(seqs)
			if n < 3 || types[n-1] != ledger.CreditsGranted || types[n-2] != ledger.RunRefunded || types[n-3] != ledger.RunCharged {
				t.Fatalf("the account's events end %v, want a charge, its refund and a grant", types)
			}
			for _, seq := range seqs[n-3 : n-1] {
				if err := st.DeleteMsg(ctx, seq); err != nil {
					t.Fatal(err)
				}
			}
		}, "(credits_granted): ledger: the event does not name the hash of the one before it on its account"},
	} {
		t.Run(tamper.name, func(t *testing.T) {
			t.Parallel()
			h := Start(t, WithLimits(NoLimits))
			a, _ := Activity(t, h) // its last run failed: charged, then refunded
			h.Do("POST", "/admin/v1/accounts/"+a.ID+"/credits", AdminToken, map[string]any{"reason": "test", "amount": 7})
			h.Stop()
			pub := DevLedgerKey(t, h.Dir)
			var out bytes.Buffer
			if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir, PublicKey: pub}, &out); err != nil ||
				!strings.Contains(out.String(), "account events signed and linked, 0 written before the ledger was signed") {
				t.Fatalf("the untampered log: %v\n%s", err, out.String())
			}
			withStream(t, h.Dir, func(ctx context.Context, st jetstream.Stream, js jetstream.JetStream) {
				tamper.do(t, ctx, st, js, a.ID)
			})
			out.Reset()
			err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir, PublicKey: pub}, &out)
			if err == nil || !strings.Contains(out.String(), "on "+subjects.Account(a.ID)+" "+tamper.want) {
				t.Fatalf("not found: %v\n%s", err, out.String())
			}
		})
	}
}

// forgeGrant publishes a grant of 5,000 on the account, as someone with
// the log's credentials but not the ledger's key would: balance-consistent,
// linked to the account's newest event, at the expected sequence.
func forgeGrant(t *testing.T, ctx context.Context, st jetstream.Stream, js jetstream.JetStream, account string) {
	last, err := st.GetLastMsgForSubject(ctx, subjects.Account(account))
	if err != nil {
		t.Fatal(err)
	}
	var ev ledger.Event
	if err := json.Unmarshal(last.Data, &ev); err != nil {
		t.Fatal(err)
	}
	forged := ledger.Event{Type: ledger.CreditsGranted, V: ledger.Version, At: ev.At.Add(time.Second), AccountID: account,
		Amount: 5000, Balance: ev.Balance + 5000, Active: ev.Active, Prev: ledger.Hash(last.Data)}
	data, _ := json.Marshal(forged)
	if _, err := js.Publish(ctx, subjects.Account(account), data, jetstream.WithExpectLastSequencePerSubject(last.Sequence)); err != nil {
		t.Fatal(err)
	}
}

// Prices and keys are signed and chained too: a price or an API key
// forged with the NATS credentials (a free App; a key the insider knows,
// on someone's account) is named by the audit.
func TestTheAuditFindsAForgedPriceAndAForgedKey(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(10)
	h.Do("PUT", "/admin/v1/apps/"+TestAppSlug+"/price", AdminToken, map[string]any{"reason": "test", "credit_cost": 9})
	h.Stop()
	pub := DevLedgerKey(t, h.Dir)
	var out bytes.Buffer
	if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir, PublicKey: pub}, &out); err != nil ||
		!strings.Contains(out.String(), "written before they were signed") || strings.Contains(out.String(), "prices and keys: 0 signed") {
		t.Fatalf("the untampered log: %v\n%s", err, out.String())
	}
	withStream(t, h.Dir, func(ctx context.Context, st jetstream.Stream, js jetstream.JetStream) {
		last, err := st.GetLastMsgForSubject(ctx, subjects.Price(TestAppSlug))
		if err != nil {
			t.Fatal(err)
		}
		price, _ := json.Marshal(engine.PriceEvent{Type: "price_set", V: engine.EventVersion, At: time.Now(), Slug: TestAppSlug,
			Actor: "admin:admin", Reason: "looks right", Prev: ledger.Hash(last.Data)})
		if _, err := js.Publish(ctx, subjects.Price(TestAppSlug), price, jetstream.WithExpectLastSequencePerSubject(last.Sequence)); err != nil {
			t.Fatal(err)
		}
		key, _ := json.Marshal(engine.KeyEvent{Type: engine.KeyCreated, V: engine.EventVersion, At: time.Now(), KeyID: "key_forged01",
			AccountID: a.ID, Hash: engine.HashKey("ak_known_to_the_insider"), Prefix: "ak_know"})
		if _, err := js.Publish(ctx, subjects.Key("key_forged01"), key); err != nil {
			t.Fatal(err)
		}
	})
	out.Reset()
	err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir, PublicKey: pub}, &out)
	for _, want := range []string{"on " + subjects.Price(TestAppSlug) + " (price_set): ledger: the event is not signed",
		"on " + subjects.Key("key_forged01") + " (" + engine.KeyCreated + "): ledger: the event is not signed"} {
		if err == nil || !strings.Contains(out.String(), want) {
			t.Fatalf("not found (want %q): %v\n%s", want, err, out.String())
		}
	}
}

// Admissions read a copy of an App's price, which is no part of the
// ledger: copies forged to make an App free are found on the charges made
// at them, each naming the price it was charged at.
func TestTheAuditFindsChargesAtAForgedPriceCopy(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	h.Stop()
	withStream(t, h.Dir, func(ctx context.Context, st jetstream.Stream, js jetstream.JetStream) {
		last, err := st.GetLastMsgForSubject(ctx, subjects.Price(TestAppSlug))
		if err != nil {
			t.Fatal(err)
		}
		var price engine.PriceEvent
		if err := json.Unmarshal(last.Data, &price); err != nil {
			t.Fatal(err)
		}
		price.CreditCost = 0 // a real price's time and signature, another cost
		data, _ := json.Marshal(price)
		for i := range 32 {
			m := nats.NewMsg(subjects.PriceCopy(TestAppSlug, i))
			m.Data = data
			m.Header.Set("Nats-Rollup", "sub")
			if _, err := js.PublishMsg(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	})
	h.Boot()
	h.WaitReady()
	run := h.Create(a, RunTestApp("ok"))
	h.WaitRun(a, run)
	h.Stop()
	var out bytes.Buffer
	err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out)
	if want := "run " + run + " charged 0 Credits at the price of " + TestAppSlug; err == nil || !strings.Contains(out.String(), want) {
		t.Fatalf("a charge at a forged price copy: %v, want %q\n%s", err, want, out.String())
	}
}
