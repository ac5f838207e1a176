package httpapi

import (
	"slices"
	"testing"
)

// Any request can be answered 429 rate_limited once its caller is past
// its refused requests' budget (refusals.go): every operation says so.
func TestEveryOperationDocumentsTheRefusalBudgetsAnswer(t *testing.T) {
	t.Parallel()
	for _, op := range operations {
		if !slices.Contains(op.codes, cRate) {
			t.Errorf("%s %s does not list rate_limited", op.method, op.path)
		}
	}
}
