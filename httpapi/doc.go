// Package httpapi owns apprun's HTTP surface: the public Run API under
// /api/v1 (spec run-api-spec.md), the admin API under /admin/v1, the event
// stream (SSE) and /healthz. Handlers are thin: decode, authenticate, call
// the engine, encode. Domain errors are mapped to HTTP in one table
// (errors.go) and every error answer is the one envelope
// {"error":{"code","message"}}.
package httpapi
