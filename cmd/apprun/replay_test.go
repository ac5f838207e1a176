package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apprun/apprun/llm/llmtest"
	. "github.com/apprun/apprun/node/nodetest"
)

// Runs recorded against a model and a web page are exported, the model
// and the page are stopped, and the export replays identically in a
// process with no server, no model and — where the machine allows one —
// no network at all. A changed App makes exactly its own runs differ.
func TestAnExportReplaysWithoutTheModelOrTheNetwork(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(SourcePage)) }))
	fake := llmtest.New()
	fake.Answer = func(r llmtest.Received) llmtest.Reply {
		if strings.Contains(r.System(), "metadata") || strings.Contains(r.System(), "meta") {
			return llmtest.Reply{Text: MetaTagsReply}
		}
		return llmtest.Reply{Text: ModelSequence}
	}
	h := Start(t, WithLimits(NoLimits), WithModel(fake), WithSourcesAllowPrivate())
	a := h.Account(1000)
	var runs []string
	for i := range 6 {
		body := ColdEmailRun()
		if i%2 == 1 {
			body = map[string]any{"app_slug": "meta-tags-from-page", "input": map[string]any{"page_url": web.URL + "/p"}}
		}
		runNo := h.Create(a, body)
		if run := h.WaitRun(a, runNo); run["status"] != "completed" {
			t.Fatalf("run %v", run)
		}
		runs = append(runs, runNo)
	}
	t.Setenv("APPRUN_URL", h.Srv.URL)
	t.Setenv("APPRUN_API_KEY", a.Key)
	t.Setenv("APPRUN_ADMIN_TOKEN", AdminToken)
	// One run by the API key, all of them by the operator's export.
	if out, errs, code := apprunIn("", "runs", "export", runs[0]); code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"record_version":1`) {
		t.Fatalf("apprun runs export: exit %d %s%s", code, out, errs)
	}
	out, errs, code := apprunIn("", "admin", "runs", "export", "--account", a.ID)
	if code != 0 || strings.Count(out, "\n") != len(runs) {
		t.Fatalf("apprun admin runs export: exit %d, %d lines %s", code, strings.Count(out, "\n"), errs)
	}
	export := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := os.WriteFile(export, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	// Through the server: each run, and every run of an App.
	if out, errs, code := apprunIn("", "replay", runs[0], runs[1]); code != 0 || strings.Count(out, `"identical":true`) != 2 {
		t.Fatalf("apprun replay <run_no>...: exit %d %s%s", code, out, errs)
	}
	if out, errs, code := apprunIn("", "replay", "--app", "meta-tags-from-page"); code != 0 || !strings.Contains(out, `"identical":3`) {
		t.Fatalf("apprun replay --app: exit %d %s%s", code, out, errs)
	}
	web.Close()
	fake.Close()
	h.Stop()
	calls := len(fake.Received())

	// A process with no server; in a network namespace of its own (no
	// interface but a loopback that is down) when the machine allows one.
	replay := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(os.Args[0], append([]string{"replay", "--file", export}, args...)...)
		if _, err := exec.LookPath("unshare"); err == nil && exec.Command("unshare", "-rn", "true").Run() == nil {
			cmd = exec.Command("unshare", append([]string{"-rn", os.Args[0], "replay", "--file", export}, args...)...)
		} else {
			t.Log("no network namespace on this machine: the replay runs with the network up")
		}
		cmd.Env = append(os.Environ(), "APPRUN_TEST_AS_MAIN=1")
		outb, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(outb), code
	}
	out, code = replay()
	if code != 0 || !strings.Contains(out, `{"replayed":6,"identical":6,"differing":0,"not_replayable":0}`) {
		t.Fatalf("apprun replay --file: exit %d\n%s", code, out)
	}

	// The cold email writer's instructions changed: its 3 runs differ,
	// each at its model step's system message; the page App's do not.
	def, err := os.ReadFile("../../apps/catalog/cold-email-writer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	changed := strings.Replace(string(def), "You are a senior B2B sales development writer.", "You are a B2B sales writer.", 1)
	if err := os.WriteFile(filepath.Join(dir, "cold-email-writer.yaml"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = replay("--apps-dir", dir)
	if code != 1 || !strings.Contains(out, `{"replayed":6,"identical":3,"differing":3,"not_replayable":0}`) {
		t.Fatalf("replay with a changed App: exit %d\n%s", code, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rep struct {
			AppSlug         string `json:"app_slug"`
			Identical       *bool  `json:"identical"`
			FirstDifference *struct {
				Path string `json:"path"`
			} `json:"first_difference"`
		}
		if json.Unmarshal([]byte(line), &rep) != nil || rep.Identical == nil {
			continue
		}
		if (rep.AppSlug == "cold-email-writer") == *rep.Identical ||
			!*rep.Identical && rep.FirstDifference.Path != "steps[1].messages[0].content" {
			t.Fatalf("report %s", line)
		}
	}
	if len(fake.Received()) != calls {
		t.Fatal("a replay called the model")
	}

	// A record is replayed from its events, the log's messages: a document
	// edited apart from them is refused, naming what was edited; a
	// downloaded record (one indented document) replays as a line does.
	first := strings.SplitN(string(mustRead(t, export)), "\n", 2)[0]
	dir2 := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir2, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edit := func(f func(doc map[string]any)) string {
		var doc map[string]any
		if err := json.Unmarshal([]byte(first), &doc); err != nil {
			t.Fatal(err)
		}
		f(doc)
		b, _ := json.Marshal(doc)
		return string(b)
	}
	for name, tampered := range map[string]string{
		"run":       edit(func(d map[string]any) { d["run"].(map[string]any)["status"] = "running" }),
		"head_hash": edit(func(d map[string]any) { d["head_hash"] = "sha256:00" }),
		"steps":     edit(func(d map[string]any) { d["steps"].([]any)[0].(map[string]any)["with_model"] = false }),
	} {
		out, errs, code := apprunIn("", "replay", "--file", file(name+".jsonl", tampered))
		if code != 1 || !strings.Contains(errs, "the document's "+name+" is not what its events say") {
			t.Fatalf("a document with its %s edited: exit %d %s%s", name, code, out, errs)
		}
	}
	// The website's download: one document, the log's bytes as stored, no
	// trailing newline.
	if out, errs, code := apprunIn("", "replay", "--file", file("download.json", first)); code != 0 ||
		!strings.Contains(out, `{"replayed":1,"identical":1,"differing":0,"not_replayable":0}`) {
		t.Fatalf("a downloaded record: exit %d %s%s", code, out, errs)
	}
	if _, errs, code := apprunIn("", "replay", "--file", file("empty.jsonl", "")); code != 1 || !strings.Contains(errs, "holds no run record") {
		t.Fatalf("an empty file: exit %d %s", code, errs)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
