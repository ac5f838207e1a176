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
	switch e.Kind {
	case Unavailable:
		if e.PastDeadline > 0 {
			return fmt.Sprintf("The model provider was not answering (%s), and the next try, in %s, would have passed the run's time limit.",
				e.answer(), e.PastDeadline.Round(time.Second))
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
	default:
		return "no answer: the connection failed"
	}
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
