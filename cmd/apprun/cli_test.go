package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/apprun/apprun/node/nodetest"
)

func TestCLIRunShowsProgressAndPrintsTheEmails(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	t.Setenv("APPRUN_URL", h.Srv.URL)
	t.Setenv("APPRUN_API_KEY", a.Key)
	in := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(in, []byte(`{"product_description":"Acme Ledger automates bookkeeping.","target_role":"Agency founders","cta_goal":"Meeting"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, progress bytes.Buffer
	if err := runCommand([]string{"cold-email-writer", "--input", in}, nil, &out, &progress); err != nil {
		t.Fatalf("apprun run: %v\n%s", err, progress.String())
	}
	if !strings.Contains(progress.String(), "25 Credits") || !strings.Contains(progress.String(), "Writing email 1 of 3") ||
		!strings.Contains(progress.String(), "completed") {
		t.Fatalf("progress:\n%s", progress.String())
	}
	for _, want := range []string{"Wrote a 3-email cold sequence", "── Email 1 · day 0", "── Email 3", "Subject: ", "Open to a 20-minute call"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("report lacks %q:\n%s", want, out.String())
		}
	}

	// --json, with the input on standard input.
	out.Reset()
	if err := runCommand([]string{"cold-email-writer", "--input", "-", "--json"}, strings.NewReader(`{"product_description":"p","target_role":"r"}`),
		&out, &progress); err != nil {
		t.Fatal(err)
	}
	var run struct {
		RunNo  string `json:"run_no"`
		Status string `json:"status"`
		Output struct {
			Emails []any `json:"emails"`
		} `json:"output"`
	}
	if err := json.Unmarshal(out.Bytes(), &run); err != nil || run.Status != "completed" || len(run.Output.Emails) != 3 {
		t.Fatalf("--json output %v: %s", err, out.String())
	}

	// An input the App refuses: the API's error, nothing charged.
	if err := runCommand([]string{"cold-email-writer", "--input", "-"}, strings.NewReader(`{"product_description":"p"}`), &out, &progress); err == nil ||
		!strings.Contains(err.Error(), "invalid_input") || !strings.Contains(err.Error(), "target_role") {
		t.Fatalf("refused input: %v", err)
	}

	out.Reset()
	if err := balanceCommand(nil, &out); err != nil || !strings.HasPrefix(out.String(), "50 Credits") {
		t.Fatalf("apprun balance: %v %q", err, out.String())
	}
	out.Reset()
	if err := runsCommand([]string{"--limit", "5"}, &out); err != nil || strings.Count(out.String(), "cold-email-writer") != 2 || !strings.Contains(out.String(), run.RunNo) {
		t.Fatalf("apprun runs: %v\n%s", err, out.String())
	}
	held := h.Create(a, RunTestApp("hold"))
	out.Reset()
	if err := cancelCommand([]string{held}, &out); err != nil || !strings.Contains(out.String(), "canceled; 10 Credits refunded") {
		t.Fatalf("apprun cancel: %v %q", err, out.String())
	}
	t.Setenv("APPRUN_API_KEY", "")
	if err := balanceCommand(nil, &out); err == nil || !strings.Contains(err.Error(), "APPRUN_API_KEY") {
		t.Fatalf("no key: %v", err)
	}
}
