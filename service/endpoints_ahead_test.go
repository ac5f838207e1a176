package service_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/inputschema"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/simlog"
	"github.com/apprun/apprun/subjects"
)

// failEndpoints fails every read of webhook endpoints while on.
type failEndpoints struct {
	port.Log
	on bool
}

var errEndpoints = errors.New("endpoints unreadable")

func (l *failEndpoints) Last(ctx context.Context, subject string) (port.Message, error) {
	if l.on && strings.HasPrefix(subject, subjects.WHEndpointsPrefix) {
		return port.Message{}, errEndpoints
	}
	return l.Log.Last(ctx, subject)
}

// On a shared log a create reads the account's webhook endpoints from the
// log while it is counted in its window (service.webhookEndpointsAhead):
// an endpoint added on another node a moment before is in the run, and a
// read that fails fails the create with nothing charged.
func TestACreateOnASharedLogCarriesEndpointsAddedOnAnotherNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ports := simlog.New().Ports()
	cat, err := engine.NewCatalog(inputschema.Compile, okApp())
	if err != nil {
		t.Fatal(err)
	}
	lim := engine.Limits{CreatePerMinute: 100}
	shared := func(c *service.Config) { c.Webhooks.AllowPrivate = true }
	a, err := engineOn(ports, cat, lim, shared)
	if err != nil {
		t.Fatal(err)
	}
	fails := &failEndpoints{Log: ports.Log}
	bPorts := ports
	bPorts.Log = fails
	b, err := engineOn(bPorts, cat, lim, shared)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*service.Service{a, b} {
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Stop)
	}
	acct, err := a.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	// b creates a run first: it has read (and could have kept) the
	// account's endpoints, none, so only the log can tell it of the new one.
	req := service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "ok", Input: map[string]any{}}
	if _, err := b.CreateRun(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddWebhookEndpoint(ctx, acct.AccountID, "https://hooks.example.com/a"); err != nil {
		t.Fatal(err)
	}
	run, err := b.CreateRun(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := b.RunLog(ctx, run.RunNo, 0)
	if err != nil || len(evs) == 0 || evs[0].Event.Created == nil {
		t.Fatalf("the run's log: %+v %v", evs, err)
	}
	if got := evs[0].Event.Created.WebhookEndpoints; !slices.Equal(got, []string{"https://hooks.example.com/a"}) {
		t.Fatalf("the run made on the other node delivers to %v, want the endpoint added a moment before", got)
	}

	fails.on = true
	if _, err := b.CreateRun(ctx, req); !errors.Is(err, errEndpoints) {
		t.Fatalf("a create whose endpoints cannot be read: %v, want the read's error", err)
	}
	if got, _, err := b.Account(ctx, acct.AccountID); err != nil || got.Balance != 90 {
		t.Fatalf("the balance after it: %+v %v, want 90 (two runs charged, the failed create not)", got, err)
	}
}
