package web

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/apprun/apprun/service"
	"github.com/nats-io/nats.go/jetstream"
)

// flash is what a form's POST hands to the page its redirect lands on
// (post-redirect-get): a reload of that page shows it no more and posts
// nothing again. It is kept beside the session, never in a URL, sealed
// with a key derived from the session's cookie, which the server does
// not keep: the bucket never holds a new API key in the clear.
type flash struct {
	// Key is a key just created: shown once.
	Key *service.NewKey `json:"key,omitempty"`
	// Secret is a webhook signing secret just made or rotated: shown once.
	Secret string `json:"secret,omitempty"`
	// Notice says what a POST did ("Key ak_ab… was revoked.").
	Notice string `json:"notice,omitempty"`
	// A run form that was refused: its values, its field errors, and a
	// problem for the whole form.
	Form    url.Values        `json:"form,omitempty"`
	Errors  map[string]string `json:"errors,omitempty"`
	Problem string            `json:"problem,omitempty"`
	Status  int               `json:"status,omitempty"`
}

// flashKey is the flash's key in the sessions bucket, and the AEAD that
// seals it.
func flashKey(r *http.Request) (string, cipher.AEAD, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return "", nil, false
	}
	secret := sha256.Sum256([]byte("apprun flash v1\x00" + c.Value))
	block, err := aes.NewCipher(secret[:])
	if err != nil {
		return "", nil, false
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return "", nil, false
	}
	return "flash_" + sessionKey(c.Value), aead, true
}

// setFlash keeps f for the next page of this session.
func (s *sessions) setFlash(ctx context.Context, r *http.Request, f flash) error {
	k, aead, ok := flashKey(r)
	if !ok {
		return errNoSession
	}
	data, _ := json.Marshal(f)
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	_, err := s.kv.Put(ctx, k, aead.Seal(nonce, nonce, data, []byte(k)))
	return err
}

// takeFlash returns the session's flash, once.
func (s *sessions) takeFlash(ctx context.Context, r *http.Request) (flash, bool) {
	k, aead, ok := flashKey(r)
	if !ok {
		return flash{}, false
	}
	e, err := s.kv.Get(ctx, k)
	if err != nil {
		return flash{}, false
	}
	// Purge, not Delete: the secret of a new key must not stay in the
	// bucket's history.
	if err := s.kv.Purge(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return flash{}, false
	}
	sealed := e.Value()
	if len(sealed) < aead.NonceSize() {
		return flash{}, false
	}
	data, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(k))
	var f flash
	if err != nil || json.Unmarshal(data, &f) != nil {
		return flash{}, false
	}
	return f, true
}
