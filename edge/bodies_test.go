package edge

import "testing"

// The bodies read before their sender is known share the node's budget,
// and one address holds at most its share of it.
func TestBodiesFromUnknownSendersShareABudget(t *testing.T) {
	t.Parallel()
	b := NewBudget(BudgetLimits{Total: 100, PerAddr: 60})
	if !b.take("a", 60) || b.take("a", 1) {
		t.Fatal("an address holds its share, and no more")
	}
	if !b.take("b", 40) || b.take("c", 1) {
		t.Fatal("the node holds its total, and no more")
	}
	b.give("a", 60)
	if !b.take("c", 50) || len(b.byAddr) != 2 {
		t.Fatalf("what was given back is taken again (%v)", b.byAddr)
	}
	noShare := NewBudget(BudgetLimits{Total: 100})
	if !noShare.take("proxy", 100) {
		t.Fatal("without a share (behind a proxy), one address may hold the total")
	}
}
