package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// client calls a node's HTTP API.
type client struct {
	base string
	http *http.Client
}

func newClient(base string, timeout time.Duration) *client {
	tr := &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	return &client{base: base, http: &http.Client{Transport: tr, Timeout: timeout}}
}

// resp is an answer, read whole.
type resp struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends a request; body, when not nil, is sent as JSON. A transport
// error (no answer) is returned as an error; any status is an answer.
func (c *client) do(ctx context.Context, method, path, token string, body any, header map[string]string) (resp, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return resp{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return resp{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	r, err := c.http.Do(req)
	if err != nil {
		return resp{}, err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	return resp{Status: r.StatusCode, Header: r.Header, Body: b}, err
}

// decode reads the answer as JSON into v.
func (r resp) decode(v any) error {
	if err := json.Unmarshal(r.Body, v); err != nil {
		return fmt.Errorf("answer %d is not the JSON expected: %s", r.Status, r.snippet())
	}
	return nil
}

// snippet is the start of the body, for error messages.
func (r resp) snippet() string {
	s := strings.TrimSpace(string(r.Body))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// retryAfter is the answer's Retry-After (1 s when it has none).
func (r resp) retryAfter() time.Duration {
	if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	return time.Second
}

// expect fails unless the answer has the status want.
func expect(what string, r resp, err error, want int) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if r.Status != want {
		return fmt.Errorf("%s: answered %d, want %d: %s", what, r.Status, want, r.snippet())
	}
	return nil
}

// openAccount opens an account with credits through the admin API and
// returns its id and API key.
func (c *client) openAccount(ctx context.Context, admin, email string, credits int) (id, key string, err error) {
	r, err := c.do(ctx, "POST", "/admin/v1/accounts", admin, map[string]any{"email": email, "credits": credits}, nil)
	if err := expect("open account "+email, r, err, 201); err != nil {
		return "", "", err
	}
	var out struct {
		AccountID string `json:"account_id"`
		APIKey    string `json:"api_key"`
	}
	return out.AccountID, out.APIKey, r.decode(&out)
}

// addKey makes another API key for an account.
func (c *client) addKey(ctx context.Context, admin, accountID string) (string, error) {
	r, err := c.do(ctx, "POST", "/admin/v1/accounts/"+accountID+"/keys", admin, nil, nil)
	if err := expect("add a key to "+accountID, r, err, 201); err != nil {
		return "", err
	}
	var out struct {
		APIKey string `json:"api_key"`
	}
	return out.APIKey, r.decode(&out)
}

// account is GET /api/v1/account.
type account struct {
	ID         string `json:"account_id"`
	Balance    int64  `json:"balance"`
	ActiveRuns int    `json:"active_runs"`
}

func (c *client) account(ctx context.Context, key string) (account, error) {
	r, err := c.do(ctx, "GET", "/api/v1/account", key, nil, nil)
	if err := expect("GET /api/v1/account", r, err, 200); err != nil {
		return account{}, err
	}
	var a account
	return a, r.decode(&a)
}

// run is what this tool reads of a run.
type run struct {
	RunNo  string `json:"run_no"`
	Status string `json:"status"`
	Error  *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func (r run) terminal() bool { return r.Status == "completed" || r.Status == "failed" }

// coldEmail is a valid cold-email-writer create.
func coldEmail() map[string]any {
	return map[string]any{"app_slug": "cold-email-writer", "input": map[string]any{
		"product_description": "Acme Ledger automates bookkeeping for agencies", "target_role": "Agency founders"}}
}
