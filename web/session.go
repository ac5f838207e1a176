package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// cookieName is the session cookie.
const cookieName = "apprun_session"

// session is a signed-in browser. It lives in a JetStream key-value
// bucket, so every node sees it and a restart keeps it; the bucket's TTL
// removes it after its lifetime, and ExpiresAt is checked on every read.
type session struct {
	AccountID string    `json:"account_id"`
	Email     string    `json:"email"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// sessions stores sessions by the SHA-256 of their cookie value, so the
// bucket's contents cannot be replayed as cookies.
type sessions struct {
	kv  jetstream.KeyValue
	ttl time.Duration
	now func() time.Time
}

// SessionBucketName is the sessions bucket's name.
const SessionBucketName = "APPRUN_SESSIONS"

// SessionBucket creates (or opens) the sessions bucket.
func SessionBucket(ctx context.Context, js jetstream.JetStream, ttl time.Duration, replicas int) (jetstream.KeyValue, error) {
	return js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: SessionBucketName, Description: "apprun website sessions", TTL: ttl,
		Storage: jetstream.FileStorage, Replicas: max(replicas, 1),
	})
}

func sessionKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// start creates a session and sets its cookie.
func (s *sessions) start(ctx context.Context, w http.ResponseWriter, r *http.Request, secure bool, accountID, email string) error {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	now := s.now()
	data, _ := json.Marshal(session{AccountID: accountID, Email: email, CreatedAt: now, ExpiresAt: now.Add(s.ttl)})
	if _, err := s.kv.Put(ctx, sessionKey(token), data); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: "/", HttpOnly: true,
		Secure: secure || r.TLS != nil, SameSite: http.SameSiteLaxMode, MaxAge: int(s.ttl.Seconds())})
	return nil
}

// errNoSession is a request without a live session.
var errNoSession = errors.New("web: not signed in")

// of returns the request's session.
func (s *sessions) of(r *http.Request) (session, error) {
	c, err := r.Cookie(cookieName)
	if err != nil || len(c.Value) < 40 || len(c.Value) > 64 {
		return session{}, errNoSession
	}
	e, err := s.kv.Get(r.Context(), sessionKey(c.Value))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return session{}, errNoSession
	}
	if err != nil {
		return session{}, err
	}
	var sess session
	if err := json.Unmarshal(e.Value(), &sess); err != nil || !s.now().Before(sess.ExpiresAt) {
		return session{}, errNoSession
	}
	return sess, nil
}

// end deletes the request's session and its cookie.
func (s *sessions) end(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		_ = s.kv.Delete(r.Context(), sessionKey(c.Value))
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, MaxAge: -1, SameSite: http.SameSiteLaxMode})
}

// endAccount deletes every session of the account (a password reset
// signs out every browser). Sessions are stored by their cookie's hash,
// so it reads the whole bucket: rare, and bounded by the live sessions.
func (s *sessions) endAccount(ctx context.Context, accountID string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := s.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	var keys []string
	for e := range w.Updates() {
		if e == nil { // every current value has come
			break
		}
		var sess session
		if json.Unmarshal(e.Value(), &sess) == nil && sess.AccountID == accountID {
			keys = append(keys, e.Key())
		}
	}
	_ = w.Stop()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, k := range keys {
		if err := s.kv.Delete(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return err
		}
	}
	return nil
}
