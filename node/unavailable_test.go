package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/nats-io/nats.go/jetstream"
)

func TestEventLogUnreachableIsInternalErrorAndWritesNothing(t *testing.T) {
	h := Start(t)
	a := h.Account(100)
	h.Node.EmbeddedNATS().Stop() // the embedded NATS server goes away under a running node
	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/api/v1/runs", RunTestApp("ok")},
		{"GET", "/api/v1/account", nil},
	} {
		r := h.Do(req.method, req.path, a.Key, req.body)
		if r.Status != 503 || r.ErrorCode(t) != "internal_error" {
			t.Fatalf("%s %s with NATS down: %d %s, want 503 internal_error", req.method, req.path, r.Status, r.Body)
		}
	}
	if bal, active := h.Balance(a); bal != 100 || active != 0 {
		t.Fatalf("a failed request changed the account: balance %d active %d", bal, active)
	}
}

// A write the log stored is answered as stored, even when this node's read
// models cannot show it in time (they had stopped: a disk that filled
// under the projections file stops them). The grant was answered 503
// "safe to retry" while it was in the log, and the retry granted again;
// an account, a key and a brand context were made twice so. The answer
// is the write's, and a later read waits for it. A revocation is the
// exception (below).
func TestAStoredWriteIsAnsweredAsStoredWhenTheReadModelsLag(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithWriteWait(100*time.Millisecond))
	a := h.Account(100)
	h.Node.Projections().Stop() // the read models apply nothing more
	if r := h.Do("POST", "/admin/v1/accounts/"+a.ID+"/credits", AdminToken, map[string]any{"reason": "test", "amount": 50}); r.Status != 200 || r.JSON(t)["balance"] != float64(150) {
		t.Errorf("a grant the log stored: %d %s, want 200 with the balance 150", r.Status, r.Body)
	}
	if r := h.Do("POST", "/admin/v1/accounts", AdminToken, map[string]any{"email": "b@example.com", "credits": 5}); r.Status != 201 {
		t.Errorf("an account the log stored: %d %s, want 201", r.Status, r.Body)
	}
	if r := h.Do("POST", "/admin/v1/accounts/"+a.ID+"/keys", AdminToken, nil); r.Status != 201 {
		t.Errorf("a key the log stored: %d %s, want 201", r.Status, r.Body)
	}
	if r := h.Do("POST", "/api/v1/brand-contexts", a.Key, map[string]any{"name": "Acme"}); r.Status != 201 {
		t.Errorf("a brand context the log stored: %d %s, want 201", r.Status, r.Body)
	}
	// A revocation promises the key fails at once, which this node's key
	// check (its read models) cannot keep yet: no 204. Repeating it is
	// harmless, so the 503 hides nothing.
	if r := h.Do("DELETE", "/admin/v1/keys/"+a.KeyID, AdminToken, nil); r.Status != 503 {
		t.Errorf("a revocation the read models cannot show: %d %s, want 503 (the key still works here)", r.Status, r.Body)
	}
	h.Restart()
	if balance, _ := h.Balance(a); balance != 150 {
		t.Errorf("after a restart: balance %d, want 150 (granted once)", balance)
	}
	if r := h.Do("DELETE", "/admin/v1/keys/"+a.KeyID, AdminToken, nil); r.Status != 204 {
		t.Errorf("the revocation repeated after the restart: %d %s, want 204", r.Status, r.Body)
	}
	if r := h.Do("GET", "/api/v1/account", a.Key, nil); r.Status != 401 {
		t.Errorf("the revoked key after the restart: %d, want 401", r.Status)
	}
}

// Read models that stopped (an event they cannot apply, a disk that
// filled under their file) are a node to restart, and its probes say so:
// both answered "starting: catching up with the log", which a node that
// stopped applying never will.
func TestStoppedReadModelsSayWhyInTheProbes(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	js, err := jetstream.New(h.Node.NATS())
	if err != nil {
		t.Fatal(err)
	}
	// A run's event for a run that was never created: the applier stops.
	if _, err := js.Publish(context.Background(), "apprun.run.run_aaaaaaaaaaaaaaaa", []byte(`{"type":"started","v":1}`)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := h.Do("GET", "/healthz", "", nil)
		if r.Status == 503 {
			if !strings.Contains(string(r.Body), `"status":"failed"`) || !strings.Contains(string(r.Body), "restart") {
				t.Errorf("/healthz with the read models stopped: %s, want failed, asking for a restart", r.Body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz with the read models stopped: %d %s, want 503", r.Status, r.Body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := h.Do("GET", "/readyz", "", nil); r.Status != 503 || !strings.Contains(string(r.Body), "read models stopped") {
		t.Errorf("/readyz with the read models stopped: %d %s, want 503 saying so", r.Status, r.Body)
	}
}
