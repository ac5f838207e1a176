package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
)

// Kind says how a completion failed.
type Kind int

const (
	// Unavailable: the provider kept failing (429, 5xx, dropped
	// connections) until the attempts or the deadline ran out.
	Unavailable Kind = iota + 1
	// Rejected: the provider refused the request (a 4xx other than 429:
	// a wrong key, an unknown model, a request too large).
	Rejected
	// EmptyReply: the provider answered with no text.
	EmptyReply
	// Declined: the model said why it would not answer instead (strict
	// mode's refusal).
	Declined
)

// Error is a completion that failed.
type Error struct {
	Kind     Kind
	Status   int // the provider's last HTTP status, 0 when none
	Attempts int
	// PastDeadline, when set, is the wait that was not waited because it
	// would end past the caller's deadline.
	PastDeadline time.Duration
	Err          error
}

// Error is Words, then Details.
func (e *Error) Error() string { return e.Words() + " (" + e.Details() + ")" }

func (e *Error) Unwrap() error { return e.Err }

// Words says what happened for a person: what the provider did, not how
// the client saw it.
func (e *Error) Words() string {
	var notCompletion *errNotCompletion
	if errors.As(e.Err, &notCompletion) {
		return "The model provider's address answered with a web page, not a chat completion."
	}
	switch e.Kind {
	case Unavailable:
		if e.PastDeadline > 0 {
			return fmt.Sprintf("The model provider was not answering (%s), and the next try, in %s, would have passed the run's time limit.",
				e.answer(), Duration(e.PastDeadline))
		}
		return fmt.Sprintf("The model provider did not answer after %d attempts (the last: %s).", e.Attempts, e.answer())
	case Rejected:
		return fmt.Sprintf("The model provider refused the request (%s).", e.answer())
	case Declined:
		return "The model declined to write this: " + strings.TrimSpace(e.Err.Error())
	default:
		return "The model's reply was empty."
	}
}

// answer is the provider's last answer in words.
func (e *Error) answer() string {
	switch {
	case e.Status == http.StatusTooManyRequests:
		return "429, too many requests"
	case e.Status != 0:
		return fmt.Sprintf("%d, %s", e.Status, strings.ToLower(http.StatusText(e.Status)))
	case errors.Is(e.Err, errCutOff):
		return "its reply stopped before its end"
	default:
		return "no answer: the connection failed"
	}
}

// Duration is d in words: "1 s", "45 s", "10 min", "2 h 5 min".
func Duration(d time.Duration) string {
	secs := int((d + time.Second - 1) / time.Second)
	switch {
	case secs < 1:
		return "1 s"
	case secs < 120:
		return fmt.Sprintf("%d s", secs)
	case secs < 2*3600:
		return fmt.Sprintf("%d min", (secs+59)/60)
	}
	h, m := secs/3600, (secs%3600+59)/60
	if m == 0 {
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}

// Details is what the client saw, for an operator: the provider's own
// message where it sent one. Never the key.
func (e *Error) Details() string {
	var apiErr *openai.Error
	if errors.As(e.Err, &apiErr) {
		d := fmt.Sprintf("HTTP %d", apiErr.StatusCode)
		if apiErr.Message != "" {
			d += ": " + apiErr.Message
		}
		return d
	}
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}
