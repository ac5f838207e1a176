// Package layout holds apprun's package layout as data, and its test
// holds every package to it: which of apprun's packages each may import
// (docs/architecture.md draws the same). A package that is not in the
// table, or imports one of ours the table does not allow it, fails the
// test: a new arrow is a decision, made here and in the docs.
package layout
