package httpapi_test

import (
	"strings"
	"testing"

	. "github.com/apprun/apprun/node/nodetest"
)

// Brand contexts on the API: listed newest first, changed member by
// member with PATCH, deleted with DELETE; another account's is not found;
// a deleted one cannot be named by a run.
func TestBrandContextsAreListedChangedAndDeletedOnTheAPI(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a, other := h.Account(100), h.Account(100)
	first := h.Do("POST", "/api/v1/brand-contexts", a.Key, map[string]any{"name": "Acme", "voice": "plain", "website": "https://acme.example"}).JSON(t)["brand_context_id"].(string)
	second := h.Do("POST", "/api/v1/brand-contexts", a.Key, map[string]any{"name": "Beta"}).JSON(t)["brand_context_id"].(string)

	list := h.Do("GET", "/api/v1/brand-contexts", a.Key, nil)
	data, _ := list.JSON(t)["data"].([]any)
	if list.Status != 200 || len(data) != 2 || data[0].(map[string]any)["brand_context_id"] != second || data[1].(map[string]any)["voice"] != "plain" ||
		strings.Contains(string(list.Body), "account_id") {
		t.Fatalf("list: %d %s, want both, newest first, with their fields and no account id", list.Status, list.Body)
	}
	if r := h.Do("GET", "/api/v1/brand-contexts", other.Key, nil); r.Status != 200 || strings.TrimSpace(string(r.Body)) != `{"data":[]}` {
		t.Fatalf("another account's list: %d %s", r.Status, r.Body)
	}

	r := h.Do("PATCH", "/api/v1/brand-contexts/"+first, a.Key, map[string]any{"voice": "warm"})
	got := r.JSON(t)
	if r.Status != 200 || got["name"] != "Acme" || got["voice"] != "warm" || got["website"] != "https://acme.example" || got["updated_at"] == nil {
		t.Fatalf("PATCH voice: %d %s, want the voice changed and the rest kept", r.Status, r.Body)
	}
	for _, tc := range []struct {
		name, key, id string
		body          any
		status        int
		code          string
	}{
		{"another account's", other.Key, first, map[string]any{"name": "Mine"}, 404, "not_found"},
		{"an unknown id", a.Key, "bc_aaaaaaaaaaaaaaaa", map[string]any{"name": "X"}, 404, "not_found"},
		{"a blank name", a.Key, first, map[string]any{"name": " "}, 422, "invalid_input"},
		{"a member of no brand context", a.Key, first, map[string]any{"colour": "red"}, 400, "invalid_request"},
		{"no member", a.Key, first, map[string]any{}, 400, "invalid_request"},
	} {
		if r := h.Do("PATCH", "/api/v1/brand-contexts/"+tc.id, tc.key, tc.body); r.Status != tc.status || r.ErrorCode(t) != tc.code {
			t.Errorf("PATCH %s: %d %s, want %d %s", tc.name, r.Status, r.Body, tc.status, tc.code)
		}
	}

	if r := h.Do("DELETE", "/api/v1/brand-contexts/"+first, other.Key, nil); r.Status != 404 || r.ErrorCode(t) != "not_found" {
		t.Fatalf("another account's DELETE: %d %s", r.Status, r.Body)
	}
	if r := h.Do("DELETE", "/api/v1/brand-contexts/"+first, a.Key, nil); r.Status != 204 {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	if r := h.Do("DELETE", "/api/v1/brand-contexts/"+first, a.Key, nil); r.Status != 404 {
		t.Fatalf("a second DELETE: %d %s", r.Status, r.Body)
	}
	if data := h.Do("GET", "/api/v1/brand-contexts", a.Key, nil).JSON(t)["data"].([]any); len(data) != 1 || data[0].(map[string]any)["brand_context_id"] != second {
		t.Fatalf("the list after the delete: %v", data)
	}
	run := h.Do("POST", "/api/v1/runs", a.Key, map[string]any{"app_slug": "cold-email-writer", "input": ColdEmailRun()["input"], "brand_context_id": first})
	if run.Status != 422 || run.ErrorCode(t) != "invalid_brand_context" {
		t.Fatalf("a run naming the deleted brand context: %d %s", run.Status, run.Body)
	}
}
