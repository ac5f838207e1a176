package main

import (
	"os"
	"testing"

	"github.com/apprun/apprun/node/nodetest"
)

// The harness checks every answer against the OpenAPI document
// (nodetest.Main); the apprun binary the tests built goes with them.
func TestMain(m *testing.M) {
	nodetest.Main(m, func() {
		// Only a directory the tests made: APPRUN_TEST_BINARY's is make
		// test's bin/, where stripe-mock and the bench's binary are too.
		if built.dir != "" {
			os.RemoveAll(built.dir)
		}
	})
}
