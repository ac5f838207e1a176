package nodetest

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apprun/apprun/node"
	"github.com/apprun/apprun/projections"
)

// WaitFor polls cond until it holds, failing the test after within.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Concurrently runs n requests at once and counts answers by status+code.
func Concurrently(t *testing.T, n int, do func(i int) Response) (map[string]int, []Response) {
	t.Helper()
	var wg sync.WaitGroup
	out := make([]Response, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = do(i) }()
	}
	wg.Wait()
	counts := map[string]int{}
	for _, r := range out {
		key := strconv.Itoa(r.Status)
		if r.Status >= 400 {
			key += " " + r.ErrorCode(t)
		}
		if r.Status == 429 {
			ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
			if err != nil || ra < 1 || ra > 60 {
				t.Fatalf("429 with Retry-After %q, want whole seconds from 1 to 60", r.Header.Get("Retry-After"))
			}
		}
		counts[key]++
	}
	return counts, out
}

func ErrCode(m map[string]any) any {
	if e, ok := m["error"].(map[string]any); ok {
		return e["code"]
	}
	return nil
}

func EventNames(evs []SSEEvent) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Event)
	}
	return strings.Join(s, ",")
}

// LogHead is the sequence of the newest message in the node's log.
func (h *Harness) LogHead() uint64 {
	h.T.Helper()
	head, err := h.Node.Engine().LogHead(context.Background())
	if err != nil {
		h.T.Fatal(err)
	}
	return head
}

// KeyUsed waits until the key's last use is recorded (a write of its
// own, at most once a minute a key), so that what follows is measured
// without it.
func (h *Harness) KeyUsed(a Account) {
	h.T.Helper()
	h.Do("GET", "/api/v1/account", a.Key, nil)
	WaitFor(h.T, 10*time.Second, "the key's use recorded", func() bool {
		k, err := h.Node.Reads().KeyByID(a.KeyID)
		return err == nil && !k.LastUsedAt.IsZero()
	})
}

// WaitRunDone waits until the read model has the run ended (the built-in
// cold email writer takes milliseconds).
func (h *Harness) WaitRunDone(runNo string) {
	h.T.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if r, err := h.Node.Reads().Run(runNo); err == nil && r.Terminal() {
			return
		}
		if time.Now().After(deadline) {
			h.T.Fatalf("run %s did not end within 20 s", runNo)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// AwaitReady polls /readyz until it answers 200 (ready) or 503 (not),
// or the deadline passes, and returns its last status and the answers it
// saw, each once, in order.
func (h *Harness) AwaitReady(deadline time.Time, ready bool) (int, []string) {
	h.T.Helper()
	want := 503
	if ready {
		want = 200
	}
	var seen []string
	for {
		r := h.Do("GET", "/readyz", "", nil)
		if body := strings.TrimSpace(string(r.Body)); !slices.Contains(seen, body) {
			seen = append(seen, body)
		}
		if r.Status == want || time.Now().After(deadline) {
			return r.Status, seen
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Activity leaves a node with accounts, keys, grants, prices, brand
// contexts (one edited, one deleted), completed and failed runs.
func Activity(t *testing.T, h *Harness) (Account, []string) {
	t.Helper()
	a := h.Account(500)
	h.Do("POST", "/admin/v1/accounts/"+a.ID+"/credits", AdminToken, map[string]any{"reason": "test", "amount": 50})
	acme := h.Do("POST", "/api/v1/brand-contexts", a.Key, map[string]any{"name": "Acme", "voice": "plain"}).JSON(t)["brand_context_id"]
	h.Do("PATCH", fmt.Sprintf("/api/v1/brand-contexts/%v", acme), a.Key, map[string]any{"voice": "warm"})
	gone := h.Do("POST", "/api/v1/brand-contexts", a.Key, map[string]any{"name": "Gone"}).JSON(t)["brand_context_id"]
	h.Do("DELETE", fmt.Sprintf("/api/v1/brand-contexts/%v", gone), a.Key, nil)
	h.Do("PUT", "/admin/v1/apps/cold-email-writer/price", AdminToken, map[string]any{"reason": "test", "credit_cost": 30})
	var runs []string
	for _, body := range []map[string]any{ColdEmailRun(), RunTestApp("ok"), RunTestApp("fail")} {
		r := h.Create(a, body)
		h.WaitRun(a, r)
		runs = append(runs, r)
	}
	b := h.Account(10)
	h.Do("DELETE", "/admin/v1/keys/"+b.KeyID, AdminToken, nil)
	return a, runs
}

func Dump(t *testing.T, dir string) map[string]map[string]string {
	t.Helper()
	s, err := projections.Open(filepath.Join(dir, "projections.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := s.Dump()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// DevLedgerKey is the public key of the ledger signing key a standalone
// node made in its data directory dir.
func DevLedgerKey(t testing.TB, dir string) ed25519.PublicKey {
	t.Helper()
	key, err := node.ReadSigningKey(filepath.Join(dir, node.DevSigningKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	return key.Public().(ed25519.PublicKey)
}

// LedgerKeyFile writes a new ledger signing key, outside any data
// directory, for nodes that share a log (they must name one).
func LedgerKeyFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger-key.pem")
	if err := node.WriteSigningKey(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// Reconciles fails t unless a statement's answer (GET …/ledger) adds up:
// its opening balance plus its lines (newest first in data) is its
// closing balance, each line's balance the one before plus its amount.
func Reconciles(t *testing.T, what string, st map[string]any) {
	t.Helper()
	lines := st["data"].([]any)
	b := st["opening_balance"].(float64)
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i].(map[string]any)
		if b += l["amount"].(float64); b != l["balance"].(float64) {
			t.Fatalf("%s: line %v does not follow a balance of %v", what, l, b-l["amount"].(float64))
		}
	}
	if b != st["closing_balance"].(float64) {
		t.Fatalf("%s: opening %v plus the lines is %v, closing %v", what, st["opening_balance"], b, st["closing_balance"])
	}
}
