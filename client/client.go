package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Client calls one apprun service with one API key.
type Client struct {
	BaseURL string
	APIKey  string
	HTTP    *http.Client
	// MaxAttempts bounds the tries of one call (default 5).
	MaxAttempts int
	// Backoff is the first wait after a 5xx or a dropped connection
	// (default 500ms); it doubles, up to 10s.
	Backoff time.Duration
}

// New returns a client for the service at baseURL.
func New(baseURL, apiKey string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), APIKey: apiKey, HTTP: &http.Client{}, MaxAttempts: 5, Backoff: 500 * time.Millisecond}
}

// Error is an error answer of the API: its status and envelope.
type Error struct {
	Status     int
	Code       string
	Message    string
	RetryAfter time.Duration
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d): %s", e.Code, e.Status, e.Message) }

// CreatedRun is the answer to a create.
type CreatedRun struct {
	RunNo      string `json:"run_no"`
	CreditCost int64  `json:"credit_cost"`
	StreamURL  string `json:"stream_url"`
	ResultURL  string `json:"result_url"`
}

// Run is a run as GET /api/v1/runs/{run_no} shows it.
type Run struct {
	RunNo           string          `json:"run_no"`
	AppSlug         string          `json:"app_slug"`
	Status          string          `json:"status"`
	CreditCost      int64           `json:"credit_cost"`
	CreatedAt       time.Time       `json:"created_at"`
	FinishedAt      *time.Time      `json:"finished_at"`
	Summary         string          `json:"summary"`
	Output          json.RawMessage `json:"output"`
	Error           *RunError       `json:"error"`
	RefundedCredits *int64          `json:"refunded_credits"`
}

// RunError says why a run failed.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Account is the key owner's balance.
type Account struct {
	AccountID  string `json:"account_id"`
	Balance    int64  `json:"balance"`
	ActiveRuns int    `json:"active_runs"`
}

// CreateOptions are the optional parts of a create.
type CreateOptions struct {
	BrandContextID string
	// MaxCreditCost, when not nil, refuses a higher price (409).
	MaxCreditCost *int64
	// IdempotencyKey overrides the key made for the call.
	IdempotencyKey string
}

// CreateRun creates a run of an App. The call carries an Idempotency-Key
// (made here unless given), so a retry after a lost answer returns the
// same run and charges nothing more.
func (c *Client) CreateRun(ctx context.Context, slug string, input any, opts *CreateOptions) (CreatedRun, error) {
	body := map[string]any{"app_slug": slug, "input": input}
	key := newKey()
	if opts != nil {
		if opts.BrandContextID != "" {
			body["brand_context_id"] = opts.BrandContextID
		}
		if opts.MaxCreditCost != nil {
			body["max_credit_cost"] = *opts.MaxCreditCost
		}
		if opts.IdempotencyKey != "" {
			key = opts.IdempotencyKey
		}
	}
	var out CreatedRun
	err := c.call(ctx, http.MethodPost, "/api/v1/runs", body, map[string]string{"Idempotency-Key": key}, &out)
	return out, err
}

// GetRun reads a run.
func (c *Client) GetRun(ctx context.Context, runNo string) (Run, error) {
	var r Run
	return r, c.call(ctx, http.MethodGet, "/api/v1/runs/"+runNo, nil, nil, &r)
}

// RunRecord returns a run's record document as the API sends it (GET
// /api/v1/runs/{run_no}/record): the run, what it was made from, each
// model exchange and source read, its events and ledger lines.
func (c *Client) RunRecord(ctx context.Context, runNo string) (json.RawMessage, error) {
	var r json.RawMessage
	return r, c.call(ctx, http.MethodGet, "/api/v1/runs/"+runNo+"/record", nil, nil, &r)
}

// CancelRun cancels a run (safe to repeat).
func (c *Client) CancelRun(ctx context.Context, runNo string) (Run, error) {
	var r Run
	return r, c.call(ctx, http.MethodPost, "/api/v1/runs/"+runNo+"/cancel", nil, nil, &r)
}

// ListRuns returns a page of the run history, newest first, and the cursor
// of the next page ("" at the end).
func (c *Client) ListRuns(ctx context.Context, limit int, cursor string) ([]Run, string, error) {
	path := "/api/v1/runs?limit=" + strconv.Itoa(limit)
	if cursor != "" {
		path += "&cursor=" + cursor
	}
	var page struct {
		Data       []Run  `json:"data"`
		NextCursor string `json:"next_cursor"`
	}
	err := c.call(ctx, http.MethodGet, path, nil, nil, &page)
	return page.Data, page.NextCursor, err
}

// Balance reads the account.
func (c *Client) Balance(ctx context.Context) (Account, error) {
	var a Account
	return a, c.call(ctx, http.MethodGet, "/api/v1/account", nil, nil, &a)
}

// call sends one request, retrying what is safe to retry: 429 after its
// Retry-After, 5xx and dropped connections after a doubling backoff. Every
// call this client makes is safe to repeat (reads, an idempotent cancel, a
// create with its Idempotency-Key).
func (c *Client) call(ctx context.Context, method, path string, body any, hdr map[string]string, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return err
		}
	}
	attempts := max(c.MaxAttempts, 1)
	wait := c.Backoff
	for attempt := 1; ; attempt++ {
		err := c.once(ctx, method, path, payload, hdr, out)
		if err == nil {
			return nil
		}
		var apiErr *Error
		retry, delay := false, wait
		switch {
		case errors.As(err, &apiErr) && apiErr.Status == http.StatusTooManyRequests:
			retry, delay = true, max(apiErr.RetryAfter, time.Second)
		case errors.As(err, &apiErr) && apiErr.Status >= 500:
			retry = true
		case !errors.As(err, &apiErr) && ctx.Err() == nil:
			retry = true // the connection failed or dropped
		}
		if !retry || attempt >= attempts {
			return err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait = min(wait*2, 10*time.Second)
	}
}

func (c *Client) once(ctx context.Context, method, path string, payload []byte, hdr map[string]string, out any) error {
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.APIKey)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return errorOf(resp, data)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

func errorOf(resp *http.Response, data []byte) error {
	var env struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal(data, &env)
	e := &Error{Status: resp.StatusCode, Code: env.Error.Code, Message: env.Error.Message}
	if e.Code == "" {
		e.Code, e.Message = "http_"+strconv.Itoa(resp.StatusCode), strings.TrimSpace(string(data))
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "go-" + hex.EncodeToString(b)
}
