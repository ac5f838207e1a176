package mcp_test

import (
	"testing"

	"github.com/apprun/apprun/node/nodetest"
)

// The harness checks every answer against the OpenAPI document
// (nodetest.Main).
func TestMain(m *testing.M) { nodetest.Main(m) }
