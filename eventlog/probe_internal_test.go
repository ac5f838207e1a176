package eventlog

import "testing"

// Without a leader, the log is down: at once when the node reaches no
// majority of its cluster (quorum loss: requests fail fast), after 20 s
// when it does (an election: requests wait for the new leader), and after
// 2 s when it cannot tell (an external NATS).
func TestDownTellsAnElectionFromALossOfQuorum(t *testing.T) {
	t.Parallel()
	majority := func() bool { return true }
	none := func() bool { return false }
	for _, c := range []struct {
		name   string
		quorum func() bool
		fails  int
		down   bool
	}{
		{"no quorum, first probe", none, 1, true},
		{"election, 2 s", majority, downAfter, false},
		{"election, 19.5 s", majority, electionDownAfter - 1, false},
		{"election, 20 s", majority, electionDownAfter, true},
		{"unknown, 1.5 s", nil, downAfter - 1, false},
		{"unknown, 2 s", nil, downAfter, true},
	} {
		if got := downAt(c.fails, c.quorum); got != c.down {
			t.Errorf("%s: down %v, want %v", c.name, got, c.down)
		}
	}
}
