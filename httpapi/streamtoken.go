package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/gorilla/mux"
)

// Stream tokens let a browser's EventSource, which cannot send an
// Authorization header, follow one run: POST /runs/{run_no}/stream-token
// returns a token the event stream takes as ?token=. A token names its
// run, account and expiry and is signed with HMAC-SHA256 under a key
// derived from the admin token, so every node of a cluster checks it and
// nothing is stored.

// streamTokenKey derives the signing key.
func streamTokenKey(adminToken string) []byte {
	m := hmac.New(sha256.New, []byte(adminToken))
	m.Write([]byte("apprun stream tokens v1"))
	return m.Sum(nil)
}

func (a *API) signStreamToken(runNo, accountID string, exp time.Time) string {
	payload := runNo + "." + accountID + "." + strconv.FormatInt(exp.Unix(), 10)
	m := hmac.New(sha256.New, a.tokenKey)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkStreamToken returns the account a token grants runNo's stream to.
func (a *API) checkStreamToken(token, runNo string) (string, error) {
	p, sig, ok := strings.Cut(token, ".")
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil || len(token) > 512 {
		return "", errorf(engine.CodeUnauthorized, "invalid stream token")
	}
	m := hmac.New(sha256.New, a.tokenKey)
	m.Write(payload)
	if !hmac.Equal(mac, m.Sum(nil)) {
		return "", errorf(engine.CodeUnauthorized, "invalid stream token")
	}
	parts := strings.Split(string(payload), ".")
	if len(parts) != 3 {
		return "", errorf(engine.CodeUnauthorized, "invalid stream token")
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return "", errorf(engine.CodeUnauthorized, "invalid stream token")
	}
	if parts[0] != runNo {
		return "", errorf(engine.CodeUnauthorized, "this stream token is for another run")
	}
	if !time.Now().Before(time.Unix(exp, 0)) {
		return "", errorf(engine.CodeUnauthorized, "the stream token has expired; ask for a new one")
	}
	return parts[1], nil
}

// streamToken handles POST /api/v1/runs/{run_no}/stream-token.
func (a *API) streamToken(w http.ResponseWriter, r *http.Request, c caller) {
	run, err := a.ownRun(r, c)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	exp := time.Now().Add(a.cfg.StreamTokenTTL).Truncate(time.Second)
	tok := a.signStreamToken(run.RunNo, run.AccountID, exp)
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "expires_at": exp.UTC(),
		"stream_url": fmt.Sprintf("%s?token=%s", engine.StreamURL(run.RunNo), tok)})
}

// tokenCaller authenticates an event stream request by ?token=.
func (a *API) tokenCaller(r *http.Request) (caller, error) {
	acct, err := a.checkStreamToken(r.URL.Query().Get("token"), mux.Vars(r)["run_no"])
	if err != nil {
		return caller{}, err
	}
	return caller{KeyID: engine.SessionKeyID(acct), AccountID: acct}, nil
}
