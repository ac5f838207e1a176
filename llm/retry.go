package llm

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
)

// retryAfter says whether err is worth another try and how long to wait.
func (c *Client) retryAfter(err error, attempt int) (status int, wait time.Duration, retry bool) {
	backoff := min(c.cfg.Backoff<<(attempt-1), 30*time.Second)
	var notCompletion *errNotCompletion
	if errors.As(err, &notCompletion) {
		return notCompletion.status, 0, false // a website, not a provider: asking again changes nothing
	}
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return 0, backoff, true // the connection failed or dropped mid-stream
	}
	status = apiErr.StatusCode
	if status != http.StatusTooManyRequests && status < 500 {
		return status, 0, false
	}
	if apiErr.Response != nil {
		if d, ok := parseRetryAfter(apiErr.Response.Header, time.Now()); ok {
			return status, d, true
		}
	}
	return status, backoff, true
}

// parseRetryAfter reads retry-after-ms (OpenAI's) or Retry-After, in
// seconds or as an HTTP date.
func parseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		var ms float64
		if _, err := fmt.Sscanf(v, "%g", &ms); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	var secs float64
	if _, err := fmt.Sscanf(v, "%g", &secs); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
