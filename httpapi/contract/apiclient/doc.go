// Package apiclient is oapi-codegen's default `-generate types,client`
// output for the OpenAPI document a test node serves (the shipped Apps
// and the test fixtures). It is generated, not written: the contract
// tests drive the API with it (httpapi/apiclient_test.go), which also
// fails when it is not what oapi-codegen makes of today's document.
// Regenerate it with
//
//	go test ./httpapi -run TestTheGeneratedGoClientIsCurrent -update-client
//
// oapi-codegen is a tool of go.mod (go tool oapi-codegen).
package apiclient
