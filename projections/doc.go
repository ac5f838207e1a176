// Package projections owns apprun's read models in bbolt: accounts, API
// keys, runs (with each account's history), brand contexts and prices. They
// are built only by applying the event log in order; each batch of events
// is applied in one transaction together with the sequence it reached, so
// applying is idempotent and deleting the file rebuilds the same state.
package projections
