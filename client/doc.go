// Package client is a small typed Go client for apprun's Run API: it
// creates runs with an automatic Idempotency-Key (so its retries never
// charge twice), retries 429 (after Retry-After) and 5xx answers and
// dropped connections, and follows a run's event stream, resuming with
// Last-Event-ID after a dropped connection.
package client
