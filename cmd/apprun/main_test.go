package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apprun/apprun/node/nodetest"
)

// The harness checks every answer against the OpenAPI document
// (nodetest.Main); the apprun binary the tests built goes with them.
func TestMain(m *testing.M) {
	nodetest.Main(m, func() {
		if built.bin != "" {
			os.RemoveAll(filepath.Dir(built.bin))
		}
	})
}
