package main

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/nats-io/nats-server/v2/server"
)

// An apprun node on an external NATS whose account has exactly the
// permissions docs/nats-account.conf documents: it starts, is ready,
// creates, follows and cancels runs, signs a website user up and resets
// a password (dev mode's mail), and the audit of its log passes. No
// request is refused a permission.
func TestTheDocumentedNATSPermissionsAreEnough(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a nats-server and an apprun process")
	}
	t.Parallel()
	conf, err := os.ReadFile(filepath.Join("..", "..", "docs", "nats-account.conf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := FreeAddr(t)
	const password = "test-password-0123456789"
	text := strings.NewReplacer("listen: 127.0.0.1:4222", "listen: "+addr,
		`store_dir: "./nats-data"`, `store_dir: "`+filepath.Join(dir, "nats")+`"`,
		"change-me-to-a-long-secret", password).Replace(string(conf))
	if !strings.Contains(text, addr) || !strings.Contains(text, password) || !strings.Contains(text, filepath.Join(dir, "nats")) {
		t.Fatal("docs/nats-account.conf no longer has the listen line, store_dir or password this test fills in")
	}
	path := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("docs/nats-account.conf: %v", err)
	}
	opts.NoSigs, opts.NoLog = true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	natsURL := "nats://apprun:" + url.QueryEscape(password) + "@" + addr

	c := newChaos(t)
	c.env = append(c.env, "APPRUN_LEDGER_SIGNING_KEY="+LedgerKeyFile(t))
	data := filepath.Join(c.dir, "node")
	n := c.spawn(FreeAddr(t), "--data", data, "--nats-url", natsURL, "--test-apps", "--dev")
	c.waitHealthy(n, time.Now().Add(60*time.Second))
	deadline := time.Now().Add(30 * time.Second)
	for st := 0; st != 200; {
		if st, _, _ = c.call(n, "GET", "/readyz", "", nil); time.Now().After(deadline) {
			t.Fatalf("/readyz %d", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, m, err := c.call(n, "POST", "/admin/v1/accounts", AdminToken, map[string]any{"email": "p@example.com", "credits": 100})
	if err != nil || m["api_key"] == nil {
		t.Fatalf("open an account: %v %v", m, err)
	}
	key := m["api_key"].(string)
	st, m, _ := c.call(n, "POST", "/api/v1/runs", key, sleepRun(10), "Idempotency-Key", "perm-1")
	if st != 201 {
		t.Fatalf("create: %d %v", st, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, err := (&cluster{chaos: c}).events(ctx, n, key, m["run_no"].(string), 0, nil)
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Event != "completed" {
		t.Fatalf("follow the run: %v %v", evs, err)
	}
	st, m, _ = c.call(n, "POST", "/api/v1/runs", key, sleepRun(60000))
	if st != 201 {
		t.Fatalf("create: %d %v", st, m)
	}
	if st, m, _ := c.call(n, "POST", "/api/v1/runs/"+m["run_no"].(string)+"/cancel", key, nil); st != 200 {
		t.Fatalf("cancel: %d %v", st, m)
	}
	form := url.Values{"email": {"w@example.com"}, "password": {"correct-horse-battery"}, "password_again": {"correct-horse-battery"}}
	req, _ := http.NewRequest("POST", n.base+"/signup", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", n.base)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("website sign-up (the sessions bucket): %d", resp.StatusCode)
	}
	resetThroughTheSite(t, n.base) // permissions_reset_test.go
	n.stop()
	actx, cancelAudit := context.WithTimeout(context.Background(), time.Minute)
	defer cancelAudit()
	if out, err := c.command(actx, "audit", "--data", data, "--nats-url", natsURL).CombinedOutput(); err != nil {
		t.Fatalf("audit: %v\n%s", err, out)
	}
	logs, _ := os.ReadFile(c.logs.Name())
	if strings.Contains(strings.ToLower(string(logs)), "permissions violation") {
		t.Fatalf("a request was refused a permission:\n%s", lastLines(string(logs), 20))
	}
}

// A node started before its external NATS (both started together, or
// NATS restarting) waits for it instead of exiting, then serves.
func TestANodeWaitsForAnExternalNATSThatIsNotUpYet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a nats-server and an apprun process")
	}
	t.Parallel()
	c := newChaos(t)
	c.env = append(c.env, "APPRUN_LEDGER_SIGNING_KEY="+LedgerKeyFile(t))
	natsAddr := FreeAddr(t)
	n := c.spawn(FreeAddr(t), "--data", filepath.Join(c.dir, "node"), "--nats-url", "nats://"+natsAddr)
	deadline := time.Now().Add(30 * time.Second)
	for {
		logs, _ := os.ReadFile(c.logs.Name())
		if strings.Contains(string(logs), "waiting for NATS") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node did not wait for NATS:\n%s", lastLines(string(logs), 10))
		}
		time.Sleep(50 * time.Millisecond)
	}
	host, port, _ := strings.Cut(natsAddr, ":")
	p, _ := strconv.Atoi(port)
	ns, err := server.NewServer(&server.Options{Host: host, Port: p, JetStream: true, StoreDir: filepath.Join(c.dir, "nats"), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	c.waitHealthy(n, time.Now().Add(60*time.Second))
	if st, m, _ := c.call(n, "POST", "/admin/v1/accounts", AdminToken, map[string]any{"email": "late@example.com", "credits": 10}); st != 201 {
		t.Fatalf("open an account once NATS is up: %d %v", st, m)
	}
}
