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
func streamTokenKey(admins []adminToken) []byte {
	secret := []byte{}
	for _, t := range admins { // sorted by name
		secret = append(append(append(secret, t.name...), 0), t.token...)
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("apprun stream tokens v1"))
	return m.Sum(nil)
}

func (a *API) signStreamToken(runNo, accountID, keyID string, exp time.Time) string {
	payload := runNo + "." + accountID + "." + keyID + "." + strconv.FormatInt(exp.Unix(), 10)
	m := hmac.New(sha256.New, a.tokenKey)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkStreamToken returns the caller a token grants runNo's stream to:
// the account, and the key that minted it, which must still be active.
func (a *API) checkStreamToken(token, runNo string) (caller, error) {
	p, sig, ok := strings.Cut(token, ".")
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	invalid := errorf(engine.CodeUnauthorized, "invalid stream token")
	if !ok || err1 != nil || err2 != nil || len(token) > 512 {
		return caller{}, invalid
	}
	m := hmac.New(sha256.New, a.tokenKey)
	m.Write(payload)
	if !hmac.Equal(mac, m.Sum(nil)) {
		return caller{}, invalid
	}
	parts := strings.Split(string(payload), ".")
	if len(parts) != 4 {
		return caller{}, invalid
	}
	exp, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil {
		return caller{}, invalid
	}
	if parts[0] != runNo {
		return caller{}, errorf(engine.CodeUnauthorized, "this stream token is for another run")
	}
	if !time.Now().Before(time.Unix(exp, 0)) {
		return caller{}, errorf(engine.CodeUnauthorized, "the stream token has expired; ask for a new one")
	}
	// A token lives no longer than the key that made it.
	if k, err := a.cfg.Reads.KeyByID(parts[2]); err != nil || k.Revoked || k.AccountID != parts[1] {
		return caller{}, errorf(engine.CodeUnauthorized, "the API key that made this stream token is no longer valid")
	}
	return caller{AccountID: parts[1], KeyID: parts[2]}, nil
}

// streamToken handles POST /api/v1/runs/{run_no}/stream-token.
func (a *API) streamToken(w http.ResponseWriter, r *http.Request, c caller) {
	run, err := a.ownRun(r, c)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	exp := time.Now().Add(a.cfg.StreamTokenTTL).Truncate(time.Second)
	tok := a.signStreamToken(run.RunNo, run.AccountID, c.KeyID, exp)
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "expires_at": exp.UTC(),
		"stream_url": fmt.Sprintf("%s?token=%s", streamURL(run.RunNo), tok)})
}

// tokenCaller authenticates an event stream request by ?token=.
func (a *API) tokenCaller(r *http.Request) (caller, error) {
	tok, err := queryOnce(r, "token")
	if err != nil {
		return caller{}, err
	}
	return a.checkStreamToken(tok, mux.Vars(r)["run_no"])
}
