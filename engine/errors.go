package engine

import (
	"errors"
	"fmt"
	"time"
)

// Code is a stable, machine-readable error code shown to API clients.
type Code string

// The error codes of the Run API (spec §7) plus the few the admin API and
// apprun's own decisions add.
const (
	CodeInvalidRequest      Code = "invalid_request"
	CodeUnauthorized        Code = "unauthorized"
	CodeInsufficientCredits Code = "insufficient_credits"
	CodeAppNotFound         Code = "app_not_found"
	CodeRunNotFound         Code = "run_not_found"
	CodePricingNotReady     Code = "pricing_not_ready"
	CodeInvalidInput        Code = "invalid_input"
	CodeInvalidBrandContext Code = "invalid_brand_context"
	CodeRateLimited         Code = "rate_limited"
	CodeConcurrencyLimit    Code = "concurrency_limit"
	CodeInternal            Code = "internal_error"
	CodeIdempotencyBusy     Code = "idempotency_in_progress"
	CodeIdempotencyReused   Code = "idempotency_key_reused"
	CodeAccountNotFound     Code = "account_not_found"
	CodeKeyNotFound         Code = "key_not_found"
	CodeNotFound            Code = "not_found"
	CodeMethodNotAllowed    Code = "method_not_allowed"
	CodeEmailTaken          Code = "email_taken"
	CodeRunFinished         Code = "run_already_finished"
	CodeNotAcceptable       Code = "not_acceptable"
	// Selling Credits (billing): this server sells none; the payment
	// provider failed (nothing was charged); a webhook that does not verify.
	CodeCreditsNotSold   Code = "credits_not_sold"
	CodePaymentProvider  Code = "payment_provider_error"
	CodeInvalidSignature Code = "invalid_signature"
)

// Error is the one error type of the domain: a code, a message meant for the
// client, and for 429s how long to wait.
type Error struct {
	Code       Code
	Message    string
	RetryAfter time.Duration
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, or CodeInternal when err is not an *Error.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}
