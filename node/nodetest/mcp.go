package nodetest

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds an API key to every request of the MCP client.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return b.next.RoundTrip(r)
}

// MCPConnect connects the official SDK's client to the node's /mcp over
// real HTTP with key.
func MCPConnect(t *testing.T, h *Harness, key string, progress func(*sdk.ProgressNotificationParams)) (*sdk.ClientSession, error) {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "apprun-test", Version: "v1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			if progress != nil {
				progress(req.Params)
			}
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: h.Srv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{key: key, next: http.DefaultTransport}}, MaxRetries: -1}, nil)
}

func CallTool(t *testing.T, s *sdk.ClientSession, name string, args map[string]any, token any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &sdk.CallToolParams{Name: name, Arguments: args}
	if token != nil {
		p.SetProgressToken(token)
	}
	res, err := s.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func MustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
