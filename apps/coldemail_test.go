package apps

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/inputschema"
)

func catalog(t *testing.T) *engine.Catalog {
	t.Helper()
	c, err := engine.NewCatalog(inputschema.Compile, Default()...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func runColdEmail(t *testing.T, input map[string]any, bc *engine.BrandContext) (engine.Result, []engine.Step) {
	t.Helper()
	app, err := catalog(t).Lookup(ColdEmailSlug)
	if err != nil {
		t.Fatal(err)
	}
	in, err := app.ValidateInput(input)
	if err != nil {
		t.Fatalf("input refused: %v", err)
	}
	var steps []engine.Step
	res, err := app.Executor(context.Background(), engine.Job{Input: in, BrandContext: bc}, func(s engine.Step) { steps = append(steps, s) })
	if err != nil {
		t.Fatal(err)
	}
	return res, steps
}

func emails(t *testing.T, res engine.Result) Sequence {
	t.Helper()
	data, _ := json.Marshal(res.Output)
	var s Sequence
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestColdEmailWritesTheRequestedNumberOfTouches(t *testing.T) {
	for _, n := range []string{"3 emails", "4 emails", "5 emails"} {
		t.Run(n, func(t *testing.T) {
			res, steps := runColdEmail(t, map[string]any{"product_description": "Acme Ledger automates bookkeeping.",
				"target_role": "Agency founders", "sequence_emails": n}, nil)
			s := emails(t, res)
			want := int(n[0] - '0')
			if len(s.Emails) != want {
				t.Fatalf("%d emails, want %d", len(s.Emails), want)
			}
			if len(steps) != want+3 || steps[len(steps)-1].Index != steps[len(steps)-1].Total {
				t.Fatalf("steps %+v: want one per email plus analyze, plan and review", steps)
			}
			for i, e := range s.Emails {
				if e.Subject == "" || e.Body == "" || e.Touch != i+1 || (i > 0 && e.SendDay <= s.Emails[i-1].SendDay) {
					t.Fatalf("email %d malformed: %+v", i, e)
				}
			}
			if !strings.Contains(res.Summary, n[:1]+"-email") {
				t.Fatalf("summary %q does not say what was written", res.Summary)
			}
		})
	}
}

func TestColdEmailUsesTheBrief(t *testing.T) {
	res, _ := runColdEmail(t, map[string]any{
		"product_description": "Acme Ledger automates bookkeeping for agencies.",
		"target_role":         "Agency founders",
		"value_proposition":   "Close the books in one day instead of five",
		"proof_points":        "Brightside Agency cut its month-end close from 5 days to 1.",
		"research_signals":    "Raised a seed round in October and is hiring two account managers.",
		"cta_goal":            "Meeting",
		"sender_context":      "Dana Kim, Head of Partnerships",
	}, &engine.BrandContext{Name: "Acme"})
	s := emails(t, res)
	all := ""
	for _, e := range s.Emails {
		all += e.Subject + "\n" + e.Body + "\n"
	}
	for _, want := range []string{"raised a seed round", "close the books in one day", "Brightside Agency", "20-minute call", "Dana Kim\nHead of Partnerships, Acme"} {
		if !strings.Contains(all, want) {
			t.Errorf("sequence does not contain %q:\n%s", want, all)
		}
	}
	if !strings.Contains(s.Emails[0].Body, "raised a seed round") {
		t.Errorf("the opener is not tied to the research signal: %s", s.Emails[0].Body)
	}
}

func TestColdEmailWritesChinese(t *testing.T) {
	res, _ := runColdEmail(t, map[string]any{"product_description": "Acme Ledger", "target_role": "代理公司创始人",
		"interaction_language": "Chinese", "cta_goal": "Introduction"}, nil)
	s := emails(t, res)
	if s.Language != "Chinese" || !strings.Contains(s.Emails[0].Body, "您好") || !strings.Contains(s.Emails[0].Body, "应该联系哪一位") {
		t.Fatalf("not a Chinese sequence with the introduction CTA: %+v", s.Emails[0])
	}
	if !strings.Contains(res.Summary, "封") || !strings.Contains(res.Summary, "目标：引荐合适的人") {
		t.Fatalf("summary not in Chinese: %q", res.Summary)
	}
}

func TestAppsThatNeedAModelAreNotRunnableWithoutOne(t *testing.T) {
	_, err := catalog(t).Lookup("oss-growth")
	if engine.ErrorCode(err) != engine.CodeAppNotFound {
		t.Fatalf("oss-growth lookup: %v, want app_not_found", err)
	}
	for _, a := range catalog(t).Runnable() {
		if a.Slug == "oss-growth" {
			t.Fatal("oss-growth is in the runnable list")
		}
	}
}

// BenchmarkValidateInput measures checking a create request's input
// against the cold-email-writer's JSON Schema (every create does it).
//
//	go test ./apps -run '^$' -bench ValidateInput
func BenchmarkValidateInput(b *testing.B) {
	cat, err := engine.NewCatalog(inputschema.Compile, Default()...) // compiles the schemas
	if err != nil {
		b.Fatal(err)
	}
	app, err := cat.Lookup(ColdEmailSlug)
	if err != nil {
		b.Fatal(err)
	}
	in := map[string]any{"product_description": "Acme Ledger automates bookkeeping for small agencies.",
		"target_role": "Agency founders", "cta_goal": "Meeting", "sequence_emails": "3 emails", "interaction_language": "English"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := app.ValidateInput(in); err != nil {
			b.Fatal(err)
		}
	}
}
