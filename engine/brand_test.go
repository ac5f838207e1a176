package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
)

// A brand context's checks name each failing field as data, in the
// form's order, counting characters, not bytes.
func TestCheckBrandContextNamesEachFailingField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		bc   engine.BrandContext
		want []string // field:code
	}{
		{"fine", engine.BrandContext{Name: "Acme", Voice: strings.Repeat("é", 1000)}, nil},
		{"a blank name", engine.BrandContext{Name: " \t"}, []string{"name:required"}},
		{"every limit", engine.BrandContext{Name: strings.Repeat("n", 121), Description: strings.Repeat("d", 4001), Voice: strings.Repeat("v", 1001),
			Audience: strings.Repeat("a", 1001), Website: strings.Repeat("w", 501)},
			[]string{"name:maxLength", "description:maxLength", "voice:maxLength", "audience:maxLength", "website:maxLength"}},
		{"no name and a long voice", engine.BrandContext{Voice: strings.Repeat("é", 1001)}, []string{"name:required", "voice:maxLength"}},
		{"a website", engine.BrandContext{Name: "Acme", Website: "https://acme.example/about"}, nil},
		{"a website without its scheme", engine.BrandContext{Name: "Acme", Website: "acme.example"}, []string{"website:format"}},
		{"a website in words", engine.BrandContext{Name: "Acme", Website: "hello world"}, []string{"website:format"}},
		{"a script for a website", engine.BrandContext{Name: "Acme", Website: "javascript:alert(1)"}, []string{"website:format"}},
		{"a website with no host", engine.BrandContext{Name: "Acme", Website: "https:///x"}, []string{"website:format"}},
	} {
		_, err := engine.CheckBrandContext(tc.bc)
		var got []string
		var e *engine.Error
		if errors.As(err, &e) {
			if e.Code != engine.CodeInvalidInput {
				t.Fatalf("%s: code %s", tc.name, e.Code)
			}
			for _, f := range e.Fields {
				got = append(got, f.Field+":"+f.Code)
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// An edit changes the fields it gives and keeps the rest and the
// identity; only the owner changes a brand context, and not once deleted.
func TestChangeBrandContextKeepsWhatTheEditDoesNotGive(t *testing.T) {
	t.Parallel()
	made := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	at := made.Add(time.Hour)
	cur := engine.BrandContextEvent{Type: engine.BrandContextCreated, V: 1, At: made, BrandContext: engine.BrandContext{ID: "bc_a", AccountID: "acct_a",
		Name: "Acme", Voice: "plain", Website: "https://acme.example", CreatedAt: made}}
	voice := "warm"
	ev, err := engine.ChangeBrandContext(cur, "acct_a", &engine.BrandEdit{Voice: &voice}, at)
	if err != nil || ev.Type != engine.BrandContextUpdated || ev.Name != "Acme" || ev.Voice != "warm" || ev.Website != "https://acme.example" ||
		ev.ID != "bc_a" || ev.AccountID != "acct_a" || !ev.CreatedAt.Equal(made) || !ev.UpdatedAt.Equal(at) {
		t.Fatalf("edit: %+v %v", ev, err)
	}
	blank := " "
	if _, err := engine.ChangeBrandContext(cur, "acct_a", &engine.BrandEdit{Name: &blank}, at); engine.ErrorCode(err) != engine.CodeInvalidInput {
		t.Fatalf("an edit to a blank name: %v", err)
	}
	if _, err := engine.ChangeBrandContext(cur, "acct_b", &engine.BrandEdit{Voice: &voice}, at); engine.ErrorCode(err) != engine.CodeNotFound {
		t.Fatalf("another account's edit: %v", err)
	}
	del, err := engine.ChangeBrandContext(cur, "acct_a", nil, at)
	if err != nil || !del.Deleted() || del.ID != "bc_a" || del.AccountID != "acct_a" {
		t.Fatalf("delete: %+v %v", del, err)
	}
	for _, edit := range []*engine.BrandEdit{nil, {Voice: &voice}} {
		if _, err := engine.ChangeBrandContext(del, "acct_a", edit, at); engine.ErrorCode(err) != engine.CodeNotFound {
			t.Fatalf("a change after the delete: %v", err)
		}
	}
}
