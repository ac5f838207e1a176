package apps

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// A recorded text is cut by its size as JSON, not as bytes: a page of
// markup grows when encoded, and three texts must stay under JetStream's
// 1 MiB message.
func TestARecordedTextIsBoundedAsJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		cut  bool
	}{
		{"short", "<p>hello</p>", false},
		{"plain, under the bound", strings.Repeat("a", RecordBound-2), false},
		{"plain, over the bound", strings.Repeat("a", RecordBound), true},
		{"markup that triples when encoded", strings.Repeat("<>&", RecordBound/6), true},
		{"Chinese", strings.Repeat("月末结账", RecordBound/8), true},
		{"newlines and quotes", strings.Repeat("\"\n", RecordBound/3), true},
	} {
		got, cut := withinBound(tc.text)
		enc, _ := json.Marshal(got)
		if cut != tc.cut || len(enc) > RecordBound || !utf8.ValidString(got) || !strings.HasPrefix(tc.text, got) {
			t.Errorf("%s: cut %v (want %v), %d bytes as JSON, bound %d", tc.name, cut, tc.cut, len(enc), RecordBound)
		}
		if cut && len(enc) < RecordBound-8 {
			t.Errorf("%s: cut to %d bytes as JSON, well under the bound %d", tc.name, len(enc), RecordBound)
		}
	}
}
