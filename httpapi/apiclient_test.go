package httpapi_test

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/httpapi/contract/apiclient"
	. "github.com/apprun/apprun/node/nodetest"
)

// The generated client lives in httpapi/contract/apiclient: oapi-codegen's
// default `-generate types,client` output for the document a test node
// serves (go.mod names the tool). -update-client rewrites it.
var updateClient = flag.Bool("update-client", false, "rewrite httpapi/contract/apiclient from a test node's OpenAPI document")

const clientFile = "contract/apiclient/apiclient.gen.go"

// The committed client is what oapi-codegen makes of today's document,
// and it compiles (it is imported below): a document that breaks
// oapi-codegen's default run fails here.
func TestTheGeneratedGoClientIsCurrent(t *testing.T) {
	t.Parallel()
	h := Start(t)
	doc := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(doc, h.Do("GET", "/api/v1/openapi.json", "", nil).Body, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	gen := exec.Command("go", "tool", "oapi-codegen", "-generate", "types,client", "-package", "apiclient", doc)
	gen.Stdout, gen.Stderr = &out, &stderr
	if err := gen.Run(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, stderr.String())
	}
	if *updateClient {
		if err := os.WriteFile(clientFile, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	committed, err := os.ReadFile(clientFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, out.Bytes()) {
		t.Fatalf("httpapi/%s is not what oapi-codegen makes of today's document: run go test ./httpapi -run TestTheGeneratedGoClientIsCurrent -update-client", clientFile)
	}
}

// The generated client against a node whose every answer the contract
// checker validates: a create, the run narrowed by its app_slug to its
// App's typed output, the list, a capability's output schema, the event
// stream read to its clean end, and typed error envelopes (the 422's
// code, the 429's limit).
func TestTheGeneratedGoClientSpeaksTheAPI(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(engine.Limits{CreatePerMinute: 100, ReadsPerMinute: 1000, OwnerActiveRuns: 1, PlatformActiveRuns: 100}))
	a := h.Account(1000)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := apiclient.NewClientWithResponses(h.Srv.URL, apiclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+a.Key)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	var body apiclient.CreateRunRequest
	if err := body.FromCreateRunRequestColdEmailWriter(apiclient.CreateRunRequestColdEmailWriter{AppSlug: "cold-email-writer",
		Input: apiclient.InputColdEmailWriter{ProductDescription: "Acme Ledger automates bookkeeping.", TargetRole: "Agency founders"}}); err != nil {
		t.Fatal(err)
	}
	created, err := c.CreateRunWithResponse(ctx, nil, body)
	if err != nil || created.JSON201 == nil {
		t.Fatalf("create: %v %d %s", err, created.StatusCode(), created.Body)
	}
	runNo := created.JSON201.RunNo
	h.Collect(a, runNo)

	got, err := c.GetRunWithResponse(ctx, runNo)
	if err != nil || got.JSON200 == nil {
		t.Fatalf("get: %v %s", err, got.Body)
	}
	branch, err := got.JSON200.ValueByDiscriminator()
	if err != nil {
		t.Fatal(err)
	}
	run, ok := branch.(apiclient.RunColdEmailWriter)
	if !ok || run.Status != "completed" || run.Output == nil || len(run.Output.Emails) != 3 || run.Output.Language != "English" {
		t.Fatalf("the run as its App's branch: %T %+v", branch, branch)
	}

	list, err := c.ListRunsWithResponse(ctx, nil)
	if err != nil || list.JSON200 == nil || len(list.JSON200.Data) != 1 {
		t.Fatalf("list: %v %s", err, list.Body)
	}
	capability, err := c.GetCapabilityWithResponse(ctx, "cold-email-writer")
	if err != nil || capability.JSON200 == nil || capability.JSON200.OutputSchema["properties"] == nil {
		t.Fatalf("capability: %v %s", err, capability.Body)
	}
	stream, err := c.StreamRunEventsWithResponse(ctx, runNo, nil)
	if err != nil || stream.StatusCode() != 200 || !strings.Contains(string(stream.Body), "event: completed") {
		t.Fatalf("stream: %v %d %s", err, stream.StatusCode(), stream.Body)
	}

	bad := apiclient.CreateRunRequestColdEmailWriter{AppSlug: "cold-email-writer", Input: apiclient.InputColdEmailWriter{ProductDescription: "p"}}
	if err := body.FromCreateRunRequestColdEmailWriter(bad); err != nil {
		t.Fatal(err)
	}
	refused, err := c.CreateRunWithResponse(ctx, nil, body)
	if err != nil || refused.JSON422 == nil || refused.JSON422.Error.Code != "invalid_input" {
		t.Fatalf("an invalid input: %v %d %s", err, refused.StatusCode(), refused.Body)
	}

	var hold apiclient.CreateRunRequest
	if err := hold.FromCreateRunRequestTestApp(apiclient.CreateRunRequestTestApp{AppSlug: TestAppSlug, Input: apiclient.InputTestApp{Mode: "hold"}}); err != nil {
		t.Fatal(err)
	}
	if r, err := c.CreateRunWithResponse(ctx, nil, hold); err != nil || r.JSON201 == nil {
		t.Fatalf("a held run: %v %s", err, r.Body)
	}
	full, err := c.CreateRunWithResponse(ctx, nil, hold)
	if err != nil || full.JSON429 == nil || full.JSON429.Error.Code != "concurrency_limit" ||
		full.JSON429.Error.Limit == nil || *full.JSON429.Error.Limit != "account_active_runs" {
		t.Fatalf("at the account's ceiling: %v %d %s", err, full.StatusCode(), full.Body)
	}
	h.ReleaseHeld()
}
