// Package importer names contract.Checker and llm.Client, as the test
// harness does: TestAnImporterCompilesNoneOfTheirGenerics counts what
// building it compiles of libopenapi and openai-go.
package importer

import (
	"github.com/apprun/apprun/httpapi/contract"
	"github.com/apprun/apprun/llm"
)

var (
	_ *contract.Checker
	_ *llm.Client
)
