package llm

import "fmt"

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
)

// Error is a completion that failed.
type Error struct {
	Kind     Kind
	Status   int // the provider's last HTTP status, 0 when none
	Attempts int
	Err      error
}

func (e *Error) Error() string {
	switch e.Kind {
	case Unavailable:
		return fmt.Sprintf("the model provider did not answer after %d attempts: %v", e.Attempts, e.Err)
	case Rejected:
		return fmt.Sprintf("the model provider refused the request: %v", e.Err)
	default:
		return e.Err.Error()
	}
}

func (e *Error) Unwrap() error { return e.Err }
