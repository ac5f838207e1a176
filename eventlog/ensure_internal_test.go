package eventlog

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// A stream another member made is taken only with every setting apprun
// gives it: one from an older version, without TTLs or rollups, is not
// (the create then updates it).
func TestSameStreamNeedsEverySetting(t *testing.T) {
	t.Parallel()
	want := jetstream.StreamConfig{Name: "S", Subjects: []string{"a.*"}, Replicas: 3, AllowMsgTTL: true, AllowRollup: true,
		AllowAtomicPublish: true, AllowDirect: true}
	if !sameStream(want, want) {
		t.Fatal("a stream with the wanted configuration was not taken")
	}
	for name, change := range map[string]func(*jetstream.StreamConfig){
		"no TTLs":         func(c *jetstream.StreamConfig) { c.AllowMsgTTL = false },
		"no rollups":      func(c *jetstream.StreamConfig) { c.AllowRollup = false },
		"one replica":     func(c *jetstream.StreamConfig) { c.Replicas = 1 },
		"other subjects":  func(c *jetstream.StreamConfig) { c.Subjects = []string{"a.*", "b.*"} },
		"no atomic batch": func(c *jetstream.StreamConfig) { c.AllowAtomicPublish = false },
	} {
		have := want
		change(&have)
		if sameStream(have, want) {
			t.Errorf("%s: taken", name)
		}
	}
}
