// Package ledger owns credit arithmetic: an account's state (balance and
// active runs) as a pure fold of its events, and the decisions that change it
// (grant, charge at admission, settle or refund at the end of a run).
//
// Every account event carries the state after it (balance, active runs), so
// the newest event on an account's subject is the account's state, and a
// compare-and-set on that subject makes a decision exact: two charges can
// never spend the same Credits. Apply re-derives the state from the deltas;
// the carried snapshot must agree with it, which is what an audit checks.
package ledger
