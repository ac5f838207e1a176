package apps

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/inputschema"
	"github.com/apprun/apprun/llm"
	"github.com/apprun/apprun/llm/llmtest"
)

// A step with the most repairs, whose model answers each time with the
// largest reply a record keeps, all of it escaped: every recorded model
// call still fits in one JetStream message (1 MiB), and the run fails
// after its repairs, not before.
func TestRecordedRepairCallsFitInOneMessage(t *testing.T) {
	t.Parallel()
	// The worst case in bytes: the system and user messages and the reply
	// at RecordBound, each repair's two turns at turnBound, and 16 KiB for
	// the rest of the entry and the event around it.
	if worst := 3*RecordBound + 2*maxRepairs*turnBound + 16<<10; worst > 1<<20 {
		t.Fatalf("a model call's entry may take %d bytes, over 1 MiB", worst)
	}
	def, err := os.ReadFile("catalog/cold-email-writer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	withRepairs := strings.Replace(string(def), "      size: extended\n", "      size: extended\n      repairs: 3\n", 1)
	if withRepairs == string(def) {
		t.Fatal("the definition's model step is not where the test looks")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cold-email-writer.yaml"), []byte(withRepairs), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := llmtest.New()
	defer fake.Close()
	huge := strings.Repeat("<&>", 16<<10) // 48 KiB that escape to 288 KiB, over RecordBound
	for range maxRepairs + 1 {
		fake.Script(llmtest.Reply{Text: huge, Chunks: 1})
	}
	m, err := llm.New(llm.Config{BaseURL: fake.BaseURL(), Model: "fake", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	list, err := Load(dir, &Env{Model: m, ProgressEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c, err := engine.NewCatalog(inputschema.Compile, list...)
	if err != nil {
		t.Fatal(err)
	}
	app, _ := c.Lookup(ColdEmailSlug)
	in, _ := app.ValidateInput(map[string]any{"product_description": "p", "target_role": "r"})
	var entries []engine.RecordEntry
	_, err = app.Executor(context.Background(), engine.Job{AppSlug: ColdEmailSlug, Input: in, Record: func(e engine.RecordEntry) { entries = append(entries, e) }},
		func(engine.Step) {})
	if re, ok := err.(*engine.RunError); !ok || re.Code != engine.FailModelReply {
		t.Fatalf("error %v, want %s", err, engine.FailModelReply)
	}
	models := 0
	for _, e := range entries {
		b, _ := json.Marshal(engine.RunEvent{Type: engine.RunRecorded, RunNo: "run_x", Recorded: &engine.Recorded{Entry: &e}})
		if len(b) > 1<<20 {
			t.Errorf("a %s entry of %d bytes: more than a JetStream message takes", e.Kind, len(b))
		}
		if e.Kind == engine.RecordModel {
			models++
		}
	}
	if models != maxRepairs+1 {
		t.Fatalf("%d model calls recorded, want the reply and %d repairs", models, maxRepairs)
	}
}
