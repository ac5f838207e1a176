package mailpit

import "testing"

// APPRUN_MAILPIT names the binary before anything on PATH or in GOPATH.
func TestTheVariableNamesTheBinaryFirst(t *testing.T) {
	t.Setenv("APPRUN_MAILPIT", "/opt/mailpit/bin/mailpit")
	if got := Binary(); got != "/opt/mailpit/bin/mailpit" {
		t.Fatalf("Binary() = %q, want APPRUN_MAILPIT's", got)
	}
}
