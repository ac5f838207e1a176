package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

//go:generate go run ./internal/errorsgen/cmd/errorsgen errors.json errors_generated.go

// Code is a stable, machine-readable error code shown to API clients.
//
// errors.json is the one table of the codes: per code its constant, its
// HTTP status, a default message and its anchor in docs/api.md. The
// constants and the table in errors_generated.go are made from it (go
// generate ./engine); tests check that the file is current, and hold
// httpapi's answers, the OpenAPI document and docs/api.md to the table.
type Code string

// CodeInfo is a code's entry in the error table (errors.json).
type CodeInfo struct {
	Code Code
	// Status is the HTTP status the API and the website answer the code
	// with. It is data here, read by the edge (httpapi.StatusOf): a class
	// mapped to a status there would be a second table to keep in step,
	// and engine imports no net/http.
	Status int
	// Message is the default message, for an error that has none of its own.
	Message string
	// Anchor is where docs/api.md documents the code: docs/api.md#<Anchor>.
	Anchor string
}

var codeInfo = func() map[Code]CodeInfo {
	m := make(map[Code]CodeInfo, len(errorTable))
	for _, e := range errorTable {
		m[e.Code] = e
	}
	return m
}()

// codes is the error table, in errors.json's order.
func codes() []CodeInfo { return slices.Clone(errorTable[:]) }

// ErrorCodes is the error table, in errors.json's order (the OpenAPI
// document's Error lists its codes).
func ErrorCodes() []CodeInfo { return codes() }

// Info is c's entry in the error table; ok is false for a code that has
// none (a code not made from errors.json).
func (c Code) Info() (info CodeInfo, ok bool) {
	info, ok = codeInfo[c]
	return info, ok
}

// Error is the one error type of the domain: a code, a message meant for the
// client, for 429s how long to wait, and for invalid_input each failing
// field.
type Error struct {
	Code       Code
	Message    string
	RetryAfter time.Duration
	// Limit names the limit a rate_limited or concurrency_limit refusal
	// hit (the Limit* names): a client can tell which wait it is in.
	Limit string
	// Fields are the failing fields of an invalid_input, as data: each
	// surface shows them its own way (the website beside each field, the
	// API in the message, which says the same).
	Fields []FieldError
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// The limits a 429 names (Error.Limit; docs/api.md lists them).
const (
	LimitCreatesPerMinute      = "creates_per_minute"
	LimitReadsPerMinute        = "reads_per_minute"
	LimitRefusedPerMinute      = "refused_requests_per_minute"
	LimitAccountActiveRuns     = "account_active_runs"
	LimitPlatformActiveRuns    = "platform_active_runs"
	LimitStreamsPerKey         = "streams_per_key"
	LimitStreamsPerAccount     = "streams_per_account"
	LimitConnectionsPerAddress = "unauthenticated_connections_per_address"
	LimitCheckoutsPerHour      = "checkouts_per_hour"
	LimitWebhookRedelivery     = "webhook_redelivery_interval"
)

// LimitNames are every Limit* name, for the documents that list them.
var LimitNames = []string{LimitCreatesPerMinute, LimitReadsPerMinute, LimitRefusedPerMinute, LimitAccountActiveRuns,
	LimitPlatformActiveRuns, LimitStreamsPerKey, LimitStreamsPerAccount, LimitConnectionsPerAddress,
	LimitCheckoutsPerHour, LimitWebhookRedelivery}

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

// FieldError is what is wrong with one field of a request's input.
type FieldError struct {
	// Field is the field's path from the request: "input.target_role",
	// or "input" for the input as a whole.
	Field string
	// Code is the rule it breaks, as the schema names it ("required",
	// "maxLength", "enum", …).
	Code string
	// Message says so in words.
	Message string
}

// Name is the input's top-level field a FieldError is about
// ("target_role"), or "" for the input as a whole.
func (f FieldError) Name() string {
	rest, ok := strings.CutPrefix(f.Field, "input.")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, ".")
	return name
}

// fieldMessage is the fields' errors in one sentence: "field: message;
// field: message", what the API's message says.
func fieldMessage(fields []FieldError) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.Field + ": " + f.Message
	}
	return strings.Join(parts, "; ")
}
