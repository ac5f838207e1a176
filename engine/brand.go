package engine

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Brand contexts: what an account tells runs about the brand they write
// for. Each lives on its own subject; its events are its whole state after
// each change, so the newest one is the brand context (or, deleted, the
// state it had when it was deleted).

// The brand context event kinds.
const (
	BrandContextCreated = "brand_context_created"
	BrandContextUpdated = "brand_context_updated"
	// BrandContextDeleted ends a brand context: no run can name it any
	// more. Runs made with it keep the copy they used (their record's
	// start step, or the version on the log at their creation).
	BrandContextDeleted = "brand_context_deleted"
)

// BrandContextEvent records a brand context created, changed or deleted by
// its account, with its state after the change.
type BrandContextEvent struct {
	Type string    `json:"type"` // one of the BrandContext* kinds
	V    int       `json:"v"`
	At   time.Time `json:"at"`
	BrandContext
}

// Deleted reports whether the event ended its brand context.
func (e BrandContextEvent) Deleted() bool { return e.Type == BrandContextDeleted }

// BrandContext is what a brand context holds.
type BrandContext struct {
	ID          string    `json:"brand_context_id"`
	AccountID   string    `json:"account_id"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Voice       string    `json:"voice,omitempty"`
	Audience    string    `json:"audience,omitempty"`
	Website     string    `json:"website,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	// UpdatedAt is when it was last edited (zero: never).
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// BrandFields are a brand context's fields a customer writes, in the
// order forms show them.
var BrandFields = []string{"name", "description", "voice", "audience", "website"}

// BrandFieldMax is each field's limit, in characters.
var BrandFieldMax = map[string]int{"name": 120, "description": 4000, "voice": 1000, "audience": 1000, "website": 500}

// value is the field of bc that BrandFields names.
func (bc BrandContext) value(field string) string {
	return map[string]string{"name": bc.Name, "description": bc.Description, "voice": bc.Voice, "audience": bc.Audience, "website": bc.Website}[field]
}

// CheckBrandContext trims the name and checks every field: a name, and
// each within its limit. A refusal is invalid_input with a FieldError per
// failing field (codes "required" and "maxLength", as the input schemas
// name them), in BrandFields' order.
func CheckBrandContext(bc BrandContext) (BrandContext, error) {
	bc.Name = strings.TrimSpace(bc.Name)
	var problems []FieldError
	for _, f := range BrandFields {
		v := bc.value(f)
		switch n := utf8.RuneCountInString(v); {
		case f == "name" && v == "":
			problems = append(problems, FieldError{Field: f, Code: "required", Message: "is required"})
		case n > BrandFieldMax[f]:
			problems = append(problems, FieldError{Field: f, Code: "maxLength", Message: fmt.Sprintf("at most %d characters (got %d)", BrandFieldMax[f], n)})
		case f == "website" && v != "" && !webAddress(v):
			problems = append(problems, FieldError{Field: f, Code: "format", Message: "must be an http(s) URL, like https://acme.example"})
		}
	}
	if len(problems) > 0 {
		return bc, &Error{Code: CodeInvalidInput, Message: fieldMessage(problems), Fields: problems}
	}
	return bc, nil
}

// webAddress says whether a brand's website is an http(s) URL with a
// host and no spaces: runs write it into what they make, as a link.
func webAddress(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != "" && !strings.ContainsAny(v, " \t\r\n")
}

// BrandEdit is a change to a brand context: each field given replaces
// its value, the others stay as they are.
type BrandEdit struct {
	Name, Description, Voice, Audience, Website *string
}

// EditAll is the edit that sets every field to bc's (a form sends them
// all).
func EditAll(bc BrandContext) BrandEdit {
	return BrandEdit{Name: &bc.Name, Description: &bc.Description, Voice: &bc.Voice, Audience: &bc.Audience, Website: &bc.Website}
}

// applyTo is bc with the edit's fields.
func (e BrandEdit) applyTo(bc BrandContext) BrandContext {
	for _, f := range []struct {
		v  *string
		to *string
	}{{e.Name, &bc.Name}, {e.Description, &bc.Description}, {e.Voice, &bc.Voice}, {e.Audience, &bc.Audience}, {e.Website, &bc.Website}} {
		if f.v != nil {
			*f.to = *f.v
		}
	}
	return bc
}

// ChangeBrandContext decides an edit (or, edit nil, a delete) of cur, the
// newest event on its subject, asked by accountID at at: the event to
// write, or a refusal. Another account's brand context, or a deleted one,
// is not found; an edit is checked as a create is, and keeps the id, the
// account and the creation time.
func ChangeBrandContext(cur BrandContextEvent, accountID string, edit *BrandEdit, at time.Time) (BrandContextEvent, error) {
	if cur.Deleted() || cur.AccountID != accountID {
		return BrandContextEvent{}, Errorf(CodeNotFound, "no brand context %q in this account", cur.ID)
	}
	if edit == nil {
		return BrandContextEvent{Type: BrandContextDeleted, V: EventVersion, At: at, BrandContext: cur.BrandContext}, nil
	}
	bc, err := CheckBrandContext(edit.applyTo(cur.BrandContext))
	if err != nil {
		return BrandContextEvent{}, err
	}
	bc.UpdatedAt = at
	return BrandContextEvent{Type: BrandContextUpdated, V: EventVersion, At: at, BrandContext: bc}, nil
}
