package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/internal/logbuf"
)

// serveDev runs `serve --dev` on a free port until the returned stop is called.
func serveDev(t *testing.T, dir string) (out *logbuf.Buffer, stop func()) {
	t.Helper()
	cfg, err := parseServe([]string{"--dev", "--addr", "127.0.0.1:0", "--data", dir})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	out = &logbuf.Buffer{}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, out) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "Stream it") {
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("dev banner not printed within 20s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return out, func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("serve did not stop within 20s")
		}
	}
}

var curlCreate = regexp.MustCompile(`curl -s -X POST (\S+)/api/v1/runs \\\n\s+-H 'Authorization: Bearer (\S+)' -H 'Content-Type: application/json' \\\n\s+-d '(.+)'`)

func TestDevModeCreatesADemoAccountAndPrintsWorkingCommands(t *testing.T) {
	dir := t.TempDir()
	out, stop := serveDev(t, dir)
	m := curlCreate.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no create curl in the banner:\n%s", out)
	}
	base, key, body := m[1], m[2], m[3]
	// Run the printed command's request as written.
	req, _ := http.NewRequest("POST", base+"/api/v1/runs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("printed curl got %d %v", resp.StatusCode, created)
	}
	// The printed stream command, with the run_no in place, streams to completed.
	req, _ = http.NewRequest("GET", base+created["stream_url"].(string), nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(stream), "event: completed") {
		t.Fatalf("stream did not reach completed:\n%s", stream)
	}
	if !strings.Contains(out.String(), "Admin token: adm_") {
		t.Fatalf("banner lacks the admin token:\n%s", out)
	}
	stop()
	info, err := os.Stat(filepath.Join(dir, "dev-credentials.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("dev credentials file: %v, mode %v; want 0600", err, info.Mode().Perm())
	}
	// A later dev start prints the same credentials, and the balance kept its charge.
	out2, stop2 := serveDev(t, dir)
	defer stop2()
	m2 := curlCreate.FindStringSubmatch(out2.String())
	if m2 == nil || m2[2] != key || !strings.Contains(out2.String(), strings.Split(strings.Split(out.String(), "Admin token: ")[1], "\n")[0]) {
		t.Fatalf("second start printed other credentials:\n%s", out2)
	}
	req, _ = http.NewRequest("GET", m2[1]+"/api/v1/account", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var acct map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&acct)
	resp.Body.Close()
	if acct["balance"] != float64(975) {
		t.Fatalf("after one run and a restart the demo balance is %v, want 975", acct["balance"])
	}
}

func TestShutdownEndsEventStreamsCleanly(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("hold"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events, _, _ := h.Stream(ctx, a, runNo)
	<-events // started: the stream is open
	stopped := make(chan struct{})
	go func() { h.Node.Stop(); close(stopped) }()
	for range events {
	}
	if ctx.Err() != nil {
		t.Fatal("the stream was not ended by the shutdown")
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("shutdown did not finish")
	}
	h.Node = nil
}

func TestAdminCommandsPrintTheJSON(t *testing.T) {
	h := Start(t)
	admin := func(args ...string) map[string]any {
		t.Helper()
		var out bytes.Buffer
		all := append([]string{"--url", h.Srv.URL, "--token", AdminToken}, args...)
		if err := adminCommand(all, &out); err != nil {
			t.Fatalf("apprun admin %v: %v\n%s", args, err, out.String())
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("apprun admin %v printed %q", args, out.String())
		}
		return m
	}
	acct := admin("accounts", "create", "--email", "cli@example.com", "--credits", "40")
	id := acct["account_id"].(string)
	if got := admin("credits", "grant", "--reason", "launch offer", id, "10"); got["balance"] != float64(50) {
		t.Fatalf("grant printed %v", got)
	}
	if got := admin("credits", "adjust", "--reason", "over-grant", id, "--", "-5"); got["balance"] != float64(45) {
		t.Fatalf("adjust printed %v", got)
	}
	if got := admin("accounts", "show", id); got["balance"] != float64(45) || got["email"] != "cli@example.com" {
		t.Fatalf("accounts show printed %v", got)
	}
	st := admin("ledger", id, "--from", time.Now().UTC().Format(time.DateOnly))
	if st["opening_balance"] != float64(0) || st["closing_balance"] != float64(45) || len(st["data"].([]any)) != 3 {
		t.Fatalf("ledger printed %v", st)
	}
	if lines := st["data"].([]any); lines[0].(map[string]any)["actor"] != "admin:admin" || lines[0].(map[string]any)["reason"] != "over-grant" {
		t.Fatalf("the adjustment's line %v", lines[0])
	}
	var csvOut bytes.Buffer
	if err := adminCommand([]string{"--url", h.Srv.URL, "--token", AdminToken, "ledger", id, "--format", "csv"}, &csvOut); err != nil ||
		!strings.HasPrefix(csvOut.String(), "seq,time_utc,type,amount,balance,") || !strings.Contains(csvOut.String(), ",closing_balance,,45,") {
		t.Fatalf("ledger --format csv: %v\n%s", err, csvOut.String())
	}
	key := admin("keys", "create", id)
	if got := admin("keys", "revoke", key["key_id"].(string)); got["status"] != float64(204) {
		t.Fatalf("revoke printed %v", got)
	}
	if got := admin("prices", "set", "--reason", "model change", "cold-email-writer", "--recalibrating"); got["recalibrating"] != true {
		t.Fatalf("prices set printed %v", got)
	}
	if got := admin("prices", "set", "--reason", "new cost", "cold-email-writer", "20"); got["credit_cost"] != float64(20) {
		t.Fatalf("prices set printed %v", got)
	}
	var out bytes.Buffer
	if err := adminCommand([]string{"--url", h.Srv.URL, "--token", "wrong-token-xxxxxxxx", "keys", "create", id}, &out); err == nil || !strings.Contains(out.String(), "unauthorized") {
		t.Fatalf("wrong token: err %v, printed %q", err, out.String())
	}

	// apprun ledger checkpoint prints the log's signed checkpoint, to keep;
	// apprun audit --checkpoint proves the log still holds it.
	out.Reset()
	if err := (&cli{stdout: &out, stderr: io.Discard}).run([]string{"ledger", "checkpoint", "--url", h.Srv.URL, "--token", AdminToken}); err != nil ||
		!strings.Contains(out.String(), `"kind":"log"`) {
		t.Fatalf("apprun ledger checkpoint: %v\n%s", err, out.String())
	}
	kept := filepath.Join(t.TempDir(), "checkpoint.json")
	if err := os.WriteFile(kept, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	h.Stop()
	out.Reset()
	if err := auditCommand([]string{"--data", h.Dir, "--checkpoint", kept}, &out); err != nil || !strings.Contains(out.String(), "checkpoints: 1 in the log, 1 kept outside it, checked") {
		t.Fatalf("apprun audit --checkpoint: %v\n%s", err, out.String())
	}
}

// Dev mode's credentials file is written before the node answers: a
// script that waits for /readyz and then reads the file (the README's
// first run does) read none, now and then, when the node answered first.
func TestDevModeWritesItsCredentialsBeforeItIsReady(t *testing.T) {
	dir, addr := t.TempDir(), FreeAddr(t)
	cfg, err := parseServe([]string{"--dev", "--addr", addr, "--data", dir})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, io.Discard) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if resp, err := client.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready within 30s")
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "dev-credentials.json"))
	if err != nil || !strings.Contains(string(data), `"api_key": "ak_`) {
		t.Fatalf("the credentials file once /readyz said ready: %q %v", data, err)
	}
}
