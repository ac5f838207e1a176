package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apprun/apprun/edge"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
)

type ctxKey int

const callerKey ctxKey = 0

// caller is the authenticated owner of a request.
type caller struct {
	KeyID     string
	AccountID string
}

// bearer returns the request's Bearer token, "" when it has none (no
// Authorization header, or another scheme), and an error when it has more
// than one Authorization header: a proxy in front that read another of
// them than this node would see another caller than the one served.
func bearer(r *http.Request) (string, error) {
	v := r.Header["Authorization"] // canonical already: Header.Get would canonicalise it on every request
	switch {
	case len(v) > 1:
		return "", errorf(engine.CodeUnauthorized, "send one Authorization header, not %d", len(v))
	case len(v) == 0 || len(v[0]) < 7 || !strings.EqualFold(v[0][:7], "bearer "):
		return "", nil
	}
	return strings.TrimSpace(v[0][7:]), nil
}

// authenticate resolves the Bearer API key (spec §5): unknown, malformed
// and revoked keys are all unauthorized. It reads the headers only: no
// route reads a body before it. A key past its refusal budget is answered
// rate_limited, and so is a failed key check from an address past its own
// (refusals.go).
func (a *API) authenticate(w http.ResponseWriter, r *http.Request) (caller, error) {
	c, err := a.keyOf(r)
	if err != nil {
		if wait := a.refused.addrs.spent(addrOf(r), time.Now()); wait > 0 {
			return caller{}, tooManyRefused(wait, "address")
		}
		return caller{}, err
	}
	known(w, r, c.KeyID)
	if wait := a.refused.keys.spent(c.KeyID, time.Now()); wait > 0 {
		return caller{}, tooManyRefused(wait, "API key")
	}
	return c, nil
}

// keyOf is the caller of the request's Bearer API key.
func (a *API) keyOf(r *http.Request) (caller, error) {
	tok, err := bearer(r)
	if err != nil {
		return caller{}, err
	}
	if tok == "" {
		return caller{}, errorf(engine.CodeUnauthorized, "missing Authorization: Bearer <API key> header")
	}
	if !strings.HasPrefix(tok, engine.PrefixAPIKey) || len(tok) > 128 {
		return caller{}, errorf(engine.CodeUnauthorized, "invalid API key")
	}
	hash := engine.HashKey(tok)
	k, err := a.cfg.Reads.KeyByHash(hash)
	if errors.Is(err, port.ErrNotFound) && a.keyMisses.Allow() && a.catchUp(r.Context()) {
		k, err = a.cfg.Reads.KeyByHash(hash) // made on another node a moment ago?
	}
	if errors.Is(err, port.ErrNotFound) || (err == nil && k.Revoked) {
		return caller{}, errorf(engine.CodeUnauthorized, "invalid API key")
	}
	if err != nil {
		return caller{}, err
	}
	a.touch(k)
	return caller{KeyID: k.KeyID, AccountID: k.AccountID}, nil
}

// known notes who a request authenticated as: its refusals count against
// that key (or session) rather than its address, and its connection is
// no longer an unknown client's (conns.go).
func known(w http.ResponseWriter, r *http.Request, keyID string) {
	if sw, ok := w.(*statusWriter); ok {
		sw.keyID = keyID
	}
	edge.Identified(r)
}

// Known is known for the surfaces beside the API: the website calls it
// for a signed-in session, as its key.
func Known(w http.ResponseWriter, r *http.Request, keyID string) { known(w, r, keyID) }

// touchEvery is how stale a key's last-used time may get.
const touchEvery = time.Minute

// touch records a key's use in the log, at most once a minute a key and
// node, off the request's path.
func (a *API) touch(k engine.Key) {
	now := time.Now()
	if now.Sub(k.LastUsedAt) < touchEvery {
		return
	}
	if prev, ok := a.touched.Load(k.KeyID); ok && now.Sub(prev.(time.Time)) < touchEvery {
		return
	}
	id := k.KeyID // the goroutine holds the id alone: capturing k would move it to the heap on every call
	a.touched.Store(id, now)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.cfg.Engine.TouchKey(ctx, id); err != nil {
			a.cfg.Logger.Warn("recording a key's use", "key_id", id, "err", err)
		}
	}()
}

// keyed authenticates a request by its API key and hands h the caller:
// every keyed route is registered through it (or reader), so a handler
// begins with its own work, its caller known.
func (a *API) keyed(h func(http.ResponseWriter, *http.Request, caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := a.authenticate(w, r)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		h(w, r, c)
	}
}

// reader is keyed, counting the request against the key's read limit.
func (a *API) reader(h func(http.ResponseWriter, *http.Request, caller)) http.HandlerFunc {
	return a.keyed(func(w http.ResponseWriter, r *http.Request, c caller) {
		q, err := a.cfg.Engine.AllowReadQuota(r.Context(), c.KeyID)
		setQuota(w, q)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		h(w, r, c)
	})
}

// setQuota writes the IETF RateLimit headers for the window a request
// counted against (none when it counted against no limit): the limit a
// minute, what is left of it, and the seconds until the oldest counted
// request leaves the window.
//
// It runs on every limited request, so the names are written in
// net/http's canonical form, as Header.Set would store them, and the
// three numbers are formatted into one string that the three values
// share: two allocations, where Header.Set and strconv.Itoa took up to
// six.
func setQuota(w http.ResponseWriter, q service.Quota) {
	if q.Limit <= 0 {
		return
	}
	var buf [3 * 20]byte
	b := strconv.AppendInt(buf[:0], int64(q.Limit), 10)
	i := len(b)
	b = strconv.AppendInt(b, int64(q.Remaining), 10)
	j := len(b)
	b = strconv.AppendInt(b, int64(q.Reset/time.Second), 10)
	all := string(b)
	vals := make([]string, 3) // one backing array for the three values
	vals[0], vals[1], vals[2] = all[:i], all[i:j], all[j:]
	h := w.Header()
	h[hdrLimit] = vals[0:1:1]
	if q.Remaining >= 0 {
		h[hdrRemaining] = vals[1:2:2]
	}
	h[hdrReset] = vals[2:3:3]
}

// The RateLimit header names, canonical (what Header.Set stores).
var (
	hdrLimit     = http.CanonicalHeaderKey("RateLimit-Limit")
	hdrRemaining = http.CanonicalHeaderKey("RateLimit-Remaining")
	hdrReset     = http.CanonicalHeaderKey("RateLimit-Reset")
)

// Caller is who a request authenticated as, for the surfaces behind the
// edge that are not REST handlers (MCP).
type Caller = caller

// CallerOf returns the caller RequireKey authenticated. (The REST handlers
// are handed theirs: a request copied for a context value on every read
// costs a tenth of the handler's time.)
func CallerOf(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey).(caller)
	return c, ok
}

// RequireKey puts the REST API's key check in front of another surface
// (MCP): the same authentication, refusals in the same envelope with
// WWW-Authenticate: Bearer, and every request counted against the key's
// read limit, with its RateLimit headers. next finds the caller with
// CallerOf.
func (a *API) RequireKey(next http.Handler) http.Handler {
	return a.reader(func(w http.ResponseWriter, r *http.Request, c caller) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey, c)))
	})
}

// admin guards the admin API with the admin token.
func (a *API) admin(h http.HandlerFunc) http.HandlerFunc {
	return a.adminAs(func(w http.ResponseWriter, r *http.Request, _ admin) { h(w, r) })
}

// adminAs guards the admin API with the admin tokens and tells h which
// one was used.
func (a *API) adminAs(h func(http.ResponseWriter, *http.Request, admin)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, err := bearer(r)
		name := ""
		if err == nil {
			name = a.adminNamed(tok)
		}
		if err == nil && name == "" {
			err = errorf(engine.CodeUnauthorized, "missing or invalid admin token")
		}
		if err != nil {
			a.fail(w, r, err)
			return
		}
		h(w, r, admin{name: name})
	}
}

// catchUp waits (bounded) until this node's read models have seen every
// write made anywhere so far; false when that could not be done.
func (a *API) catchUp(ctx context.Context) bool {
	head, err := a.cfg.Engine.LogHead(ctx)
	return err == nil && a.awaitRead(ctx, head) == nil
}
