package httpapi

import (
	"crypto/subtle"
	"fmt"
	"regexp"
	"sort"

	"github.com/apprun/apprun/ledger"
)

// Admin tokens have names: an admin call's events name the token's name
// as their actor ("admin:finance"), and every admin write is one
// structured log line naming it. APPRUN_ADMIN_TOKEN is the token named
// "admin".

// adminToken is one named admin token.
type adminToken struct{ name, token string }

// admin is the caller of an admin route: the name of its token.
type admin struct{ name string }

// actor is how events name the admin.
func (ad admin) actor() string { return "admin:" + ad.name }

// by is the admin's attribution, with reason.
func (ad admin) by(reason string) ledger.By { return ledger.By{Actor: ad.actor(), Reason: reason} }

// AdminNamePattern is what an admin token's name may be.
var AdminNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,31}$`)

// MinAdminToken is the shortest admin token accepted.
const MinAdminToken = 16

// adminTokens merges the token named "admin" and the named ones, sorted
// by name, and refuses a bad name, a short token, a name given twice or
// a token shared by two names.
func adminTokens(token string, named map[string]string) ([]adminToken, error) {
	var out []adminToken
	if token != "" {
		if _, ok := named["admin"]; ok {
			return nil, fmt.Errorf("httpapi: the admin token named admin is given twice")
		}
		out = append(out, adminToken{"admin", token})
	}
	for name, tok := range named {
		out = append(out, adminToken{name, tok})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("httpapi: an admin token is required")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	seen := map[string]string{}
	for _, t := range out {
		if !AdminNamePattern.MatchString(t.name) {
			return nil, fmt.Errorf("httpapi: admin token name %q: lower-case letters, digits, '.', '_' and '-', at most 32", t.name)
		}
		if len(t.token) < MinAdminToken {
			return nil, fmt.Errorf("httpapi: the admin token named %s is shorter than %d characters", t.name, MinAdminToken)
		}
		if other, ok := seen[t.token]; ok {
			return nil, fmt.Errorf("httpapi: the admin tokens named %s and %s are the same", other, t.name)
		}
		seen[t.token] = t.name
	}
	return out, nil
}

// adminNamed is the name of the admin token tok ("" when it is none),
// compared in constant time with every token.
func (a *API) adminNamed(tok string) string {
	name := ""
	for _, t := range a.admins {
		if tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(t.token)) == 1 {
			name = t.name
		}
	}
	return name
}

// adminDid logs one admin write: who, what, where in the log, and attrs.
func (a *API) adminDid(ad admin, action string, seq uint64, attrs ...any) {
	a.cfg.Logger.Info("admin action", append([]any{"actor", ad.actor(), "action", action, "seq", seq}, attrs...)...)
}
