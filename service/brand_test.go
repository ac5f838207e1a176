package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/service"
)

// brandedApp hands each job's brand context to got.
func brandedApp(got chan<- *engine.BrandContext) engine.App {
	return engine.App{Slug: "branded", Name: "branded", Price: 5, Runnable: true, AcceptsBrandContext: true, Timeout: time.Minute,
		InputSchema: []byte(`{"type":"object"}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			got <- job.BrandContext
			return engine.Result{Summary: "s", Output: map[string]any{}}, nil
		})}
}

func codeOf(err error) engine.Code {
	if err == nil {
		return ""
	}
	return engine.ErrorCode(err)
}

// Only the owning account edits or deletes a brand context (another's is
// not found); an edit keeps the limits of a create, each failing field
// named as data; a deleted one cannot be edited, deleted again or named
// by a run.
func TestABrandContextIsChangedOnlyByItsAccountWithinTheLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := startEngine(t, true, engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 12}, okApp(), brandedApp(make(chan *engine.BrandContext, 4)))
	if _, _, err := e.SetPrice(ctx, "branded", 5, false, ledger.By{Actor: "system:test", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	by := ledger.By{Actor: "system:test", Reason: "test"}
	ann, _ := e.OpenAccount(ctx, "ann@example.com", 100, by)
	bob, _ := e.OpenAccount(ctx, "bob@example.com", 100, by)
	bc, _, err := e.CreateBrandContext(ctx, ann.AccountID, engine.BrandContext{Name: " Acme ", Voice: "plain"})
	if err != nil || bc.Name != "Acme" {
		t.Fatalf("create: %+v %v", bc, err)
	}

	if _, _, err := e.UpdateBrandContext(ctx, bob.AccountID, bc.ID, engine.EditAll(engine.BrandContext{Name: "Mine now"})); codeOf(err) != engine.CodeNotFound {
		t.Fatalf("another account's edit: %v, want not_found", err)
	}
	if _, err := e.DeleteBrandContext(ctx, bob.AccountID, bc.ID); codeOf(err) != engine.CodeNotFound {
		t.Fatalf("another account's delete: %v, want not_found", err)
	}
	for _, tc := range []struct {
		name  string
		edit  engine.BrandContext
		field string
		code  string
	}{
		{"no name", engine.BrandContext{Name: "  ", Voice: "x"}, "name", "required"},
		{"a voice too long", engine.BrandContext{Name: "Acme", Voice: strings.Repeat("é", 1001)}, "voice", "maxLength"},
		{"a website too long", engine.BrandContext{Name: "Acme", Website: strings.Repeat("w", 501)}, "website", "maxLength"},
	} {
		_, _, err := e.UpdateBrandContext(ctx, ann.AccountID, bc.ID, engine.EditAll(tc.edit))
		ee, ok := err.(*engine.Error)
		if !ok || ee.Code != engine.CodeInvalidInput || len(ee.Fields) != 1 || ee.Fields[0].Field != tc.field || ee.Fields[0].Code != tc.code {
			t.Fatalf("%s: %#v, want invalid_input on %s (%s)", tc.name, err, tc.field, tc.code)
		}
	}

	saved, _, err := e.UpdateBrandContext(ctx, ann.AccountID, bc.ID, engine.EditAll(engine.BrandContext{Name: "Acme Ltd", Audience: "founders"}))
	if err != nil || saved.ID != bc.ID || saved.AccountID != ann.AccountID || !saved.CreatedAt.Equal(bc.CreatedAt) || saved.UpdatedAt.IsZero() ||
		saved.Name != "Acme Ltd" || saved.Voice != "" || saved.Audience != "founders" {
		t.Fatalf("edit: %+v %v", saved, err)
	}
	if _, err := e.DeleteBrandContext(ctx, ann.AccountID, bc.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := e.DeleteBrandContext(ctx, ann.AccountID, bc.ID); codeOf(err) != engine.CodeNotFound {
		t.Fatalf("a second delete: %v, want not_found", err)
	}
	if _, _, err := e.UpdateBrandContext(ctx, ann.AccountID, bc.ID, engine.EditAll(engine.BrandContext{Name: "Back"})); codeOf(err) != engine.CodeNotFound {
		t.Fatalf("an edit after the delete: %v, want not_found", err)
	}
	_, err = e.CreateRun(ctx, service.CreateRunRequest{AccountID: ann.AccountID, KeyID: ann.KeyID, AppSlug: "branded",
		Input: map[string]any{}, BrandContextID: &bc.ID})
	if codeOf(err) != engine.CodeInvalidBrandContext || !strings.Contains(err.Error(), "no brand context") {
		t.Fatalf("a run naming a deleted brand context: %v, want invalid_brand_context", err)
	}
	if _, err := e.DeleteBrandContext(ctx, ann.AccountID, "../x"); codeOf(err) != engine.CodeNotFound {
		t.Fatalf("an id that is none: %v, want not_found", err)
	}
}

// A run keeps the brand context it was made with: edited or deleted while
// the run waits to start, the run still writes for it as it was.
func TestARunUsesItsBrandContextAsItWasWhenTheRunWasMade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	got := make(chan *engine.BrandContext, 4)
	e := startEngine(t, true, engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 12}, okApp(), brandedApp(got))
	by := ledger.By{Actor: "system:test", Reason: "test"}
	if _, _, err := e.SetPrice(ctx, "branded", 5, false, by); err != nil {
		t.Fatal(err)
	}
	e.StopExecutor() // the runs wait until the test executes them
	acct, _ := e.OpenAccount(ctx, "a@example.com", 100, by)
	bc, _, err := e.CreateBrandContext(ctx, acct.AccountID, engine.BrandContext{Name: "Acme", Voice: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	create := func() string {
		t.Helper()
		run, err := e.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "branded",
			Input: map[string]any{}, BrandContextID: &bc.ID})
		if err != nil {
			t.Fatal(err)
		}
		return run.RunNo
	}
	first := create()
	if _, _, err := e.UpdateBrandContext(ctx, acct.AccountID, bc.ID, engine.BrandEdit{Voice: ptr("loud")}); err != nil {
		t.Fatal(err)
	}
	second := create()
	if _, err := e.DeleteBrandContext(ctx, acct.AccountID, bc.ID); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct{ run, voice string }{{first, "plain"}, {second, "loud"}} {
		if err := e.ExecuteRun(ctx, want.run, 2); err != nil {
			t.Fatal(err)
		}
		if b := <-got; b == nil || b.Voice != want.voice {
			t.Fatalf("run %s got brand context %+v, want the voice %q it had when the run was made", want.run, b, want.voice)
		}
		evs, _ := e.RunLog(ctx, want.run, 0)
		if last := evs[len(evs)-1].Event; last.Type != engine.RunCompleted {
			t.Fatalf("run %s ended %s (%+v), want completed", want.run, last.Type, last.Failed)
		}
	}
}

func ptr[T any](v T) *T { return &v }
