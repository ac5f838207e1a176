package web

import (
	"net/http"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/httpapi"
	"github.com/gorilla/mux"
)

func (s *Site) keysPage(w http.ResponseWriter, r *http.Request, v viewer) {
	s.showKeys(w, r, v, http.StatusOK, nil, "")
}

func (s *Site) showKeys(w http.ResponseWriter, r *http.Request, v viewer, status int, created *engine.NewKey, problem string) {
	keys, err := s.cfg.Reads.KeysOf(v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	data := map[string]any{"Keys": keys, "Created": created, "Welcome": r.URL.Query().Get("welcome") == "1",
		"MaxName": engine.MaxKeyName}
	if problem != "" {
		s.render(w, r, status, "keys", "API keys", data, problem)
		return
	}
	s.render(w, r, status, "keys", "API keys", data)
}

// createKey makes a key and shows it once. The page answers the POST
// directly (no redirect), so the key is never in a URL or a cache.
func (s *Site) createKey(w http.ResponseWriter, r *http.Request, v viewer) {
	k, err := s.cfg.Engine.CreateKey(r.Context(), v.AccountID, r.PostFormValue("name"))
	if e, ok := err.(*engine.Error); ok {
		s.showKeys(w, r, v, httpapi.StatusOf(e.Code), nil, e.Message)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	_ = s.cfg.Reads.WaitFor(r.Context(), k.Seq)
	s.showKeys(w, r, v, http.StatusCreated, &k, "")
}

func (s *Site) revokeKey(w http.ResponseWriter, r *http.Request, v viewer) {
	id := mux.Vars(r)["key_id"]
	keys, err := s.cfg.Reads.KeysOf(v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	owned := false
	for _, k := range keys {
		owned = owned || k.KeyID == id
	}
	if !owned { // another account's key looks like no key at all
		s.problem(w, r, http.StatusNotFound, "There is no such key on your account.")
		return
	}
	seq, err := s.cfg.Engine.RevokeKey(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	_ = s.cfg.Reads.WaitFor(r.Context(), seq)
	http.Redirect(w, r, "/settings/keys", http.StatusSeeOther)
}

func (s *Site) creditsPage(w http.ResponseWriter, r *http.Request, v viewer) {
	acct, err := s.cfg.Reads.Account(v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	lines, _, err := s.cfg.Reads.Statement(v.AccountID, 0, 200)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "credits", "Credits", map[string]any{"Account": acct, "Lines": lines})
}
