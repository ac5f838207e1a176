package httpapi_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"
)

// verify checks a delivery the way a receiver would (Standard Webhooks).
func verify(t *testing.T, secret string, d Delivery) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret %q is not a whsec_ base64 key", secret)
	}
	id, ts := d.Header.Get("webhook-id"), d.Header.Get("webhook-timestamp")
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%s.%s", id, ts, d.Body)
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	if d.Header.Get("webhook-signature") != want {
		t.Fatalf("signature %q, want %q", d.Header.Get("webhook-signature"), want)
	}
	sec, _ := strconv.ParseInt(ts, 10, 64)
	if age := time.Since(time.Unix(sec, 0)); age < -time.Minute || age > 5*time.Minute {
		t.Fatalf("webhook-timestamp %s is %s off", ts, age)
	}
}

func TestWebhookDeliveryIsSignedAndIdentifiedByTheEventID(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithWebhooks(50*time.Millisecond))
	a := h.Account(100)
	rc := NewReceiver(t)
	body := ColdEmailRun()
	body["webhook_url"] = rc.URL + "/hooks"
	runNo := h.Create(a, body)
	evs := h.Collect(a, runNo)
	got := rc.Await(t, 1)
	secret := h.Do("GET", "/api/v1/webhooks/secret", a.Key, nil).JSON(t)["secret"].(string)
	verify(t, secret, got[0])
	if id := got[0].Header.Get("webhook-id"); id != strconv.FormatUint(evs[len(evs)-1].ID, 10) {
		t.Fatalf("webhook-id %s, want the terminal event's id %d", id, evs[len(evs)-1].ID)
	}
	var payload struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(got[0].Body, &payload); err != nil || payload.Type != "run.completed" || payload.Data["run_no"] != runNo ||
		payload.Data["output"] == nil {
		t.Fatalf("payload %s", got[0].Body)
	}
	// The delivery log says so, and a redelivery sends the same id again.
	WaitDelivery(t, h, a, runNo, "delivered")
	if r := h.Do("POST", "/api/v1/webhooks/deliveries/"+runNo+"/redeliver", a.Key, nil); r.Status != 202 {
		t.Fatalf("redeliver: %d %s", r.Status, r.Body)
	}
	if again := rc.Await(t, 2); again[1].Header.Get("webhook-id") != got[0].Header.Get("webhook-id") {
		t.Fatal("a redelivery changed the webhook-id")
	}
}

func TestAFailingReceiverIsRetriedUntilItSucceeds(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithWebhooks(50*time.Millisecond))
	a := h.Account(100)
	rc := NewReceiver(t, 500, 503)
	body := RunTestApp("fail")
	body["webhook_url"] = rc.URL
	runNo := h.Create(a, body)
	got := rc.Await(t, 3)
	if got[0].Header.Get("webhook-id") != got[2].Header.Get("webhook-id") {
		t.Fatal("retries changed the webhook-id")
	}
	d := WaitDelivery(t, h, a, runNo, "delivered")
	if d["attempts"] != float64(3) || d["event"] != "failed" {
		t.Fatalf("delivery %v: want delivered on the 3rd attempt, of the failed event", d)
	}
}

func TestAWebhookDeliverySurvivesARestart(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithWebhooks(time.Second))
	a := h.Account(100)
	rc := NewReceiver(t, 503)
	body := RunTestApp("ok")
	body["webhook_url"] = rc.URL
	runNo := h.Create(a, body)
	rc.Await(t, 1) // the first attempt failed; the retry is due in 1s
	h.Restart()
	got := rc.Await(t, 2)
	if got[1].Header.Get("webhook-id") != got[0].Header.Get("webhook-id") {
		t.Fatal("the delivery after the restart is not the same delivery")
	}
	WaitDelivery(t, h, a, runNo, "delivered")
}

// A webhook URL that cannot be delivered to is refused at create,
// charging nothing. The last ones were accepted and charged, to fail at
// every delivery: loopback written as browsers and getaddrinfo read it
// (one number, hex, a short form: WHATWG's IPv4 parser), localhost with
// the root's dot, and a port out of range.
func TestWebhookURLsAreChecked(t *testing.T) {
	h := Start(t, WithLimits(NoLimits)) // production: no private receivers
	a := h.Account(100)
	for _, u := range []string{"ftp://example.com/x", "http://127.0.0.1:9/x", "http://localhost/x", "https://user:pw@example.com/",
		"http://10.0.0.1/x", "http://[::1]/x", "not a url",
		"http://2130706433/x", "http://0x7f000001/x", "http://127.1/x", "http://0/x", "http://0177.0.0.1/x", "http://10.0x0.0.1/x",
		"http://localhost./x", "http://app.localhost./x", "http://example.com:99999/x", "http://example.com:0/x",
		"http://:18699/nohost", "http://./", "https://:443/x", "https://example.com/" + strings.Repeat("a", 2000)} {
		body := ColdEmailRun()
		body["webhook_url"] = u
		if r := h.Do("POST", "/api/v1/runs", a.Key, body); r.Status != 400 || r.ErrorCode(t) != "invalid_request" {
			t.Errorf("webhook_url %q: %d %s, want 400", u, r.Status, r.Body)
		}
	}
	if bal, _ := h.Balance(a); bal != 100 {
		t.Fatalf("refused webhook URLs charged: balance %d", bal)
	}
	for _, u := range []string{"https://hooks.example.com/apprun", "https://hooks.example.com:8443/apprun", "https://8.8.8.8/x", "https://3com.example/x"} {
		body := ColdEmailRun()
		body["webhook_url"] = u
		if r := h.Do("POST", "/api/v1/runs", a.Key, body); r.Status != 201 {
			t.Fatalf("a public https URL %q: %d %s", u, r.Status, r.Body)
		}
	}
}

func TestAccountEndpointsReceiveTheRunsMadeWhileTheyAreRegistered(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithWebhooks(50*time.Millisecond))
	a := h.Account(100)
	perRun, account := NewReceiver(t), NewReceiver(t)
	r := h.Do("POST", "/api/v1/webhooks/endpoints", a.Key, map[string]any{"url": account.URL + "/all"})
	ep := r.JSON(t)
	if r.Status != 201 || ep["endpoint_id"] == nil || ep["url"] != account.URL+"/all" {
		t.Fatalf("add endpoint: %d %s", r.Status, r.Body)
	}
	if list := h.Do("GET", "/api/v1/webhooks/endpoints", a.Key, nil).JSON(t)["data"].([]any); len(list) != 1 {
		t.Fatalf("endpoints: %v", list)
	}
	// A run with its own URL goes to both; each delivery has the same id.
	body := RunTestApp("ok")
	body["webhook_url"] = perRun.URL
	h.WaitRun(a, h.Create(a, body))
	one, two := perRun.Await(t, 1), account.Await(t, 1)
	if one[0].Header.Get("webhook-id") != two[0].Header.Get("webhook-id") {
		t.Fatal("the two targets got different webhook-ids for one event")
	}
	// After removal, new runs no longer go to the endpoint.
	if r := h.Do("DELETE", "/api/v1/webhooks/endpoints/"+ep["endpoint_id"].(string), a.Key, nil); r.Status != 204 {
		t.Fatalf("remove endpoint: %d %s", r.Status, r.Body)
	}
	if r := h.Do("DELETE", "/api/v1/webhooks/endpoints/"+ep["endpoint_id"].(string), a.Key, nil); r.Status != 404 {
		t.Fatalf("remove it again: %d, want 404", r.Status)
	}
	marker := RunTestApp("ok")
	marker["webhook_url"] = perRun.URL
	h.WaitRun(a, h.Create(a, marker))
	perRun.Await(t, 2)
	n := len(account.Got())
	if n != 1 {
		t.Fatalf("the removed endpoint got %d deliveries, want only the first run's", n)
	}
	// Another account's endpoint list is its own, and private URLs are refused in production.
	if list := h.Do("GET", "/api/v1/webhooks/endpoints", h.Account(1).Key, nil).JSON(t)["data"].([]any); len(list) != 0 {
		t.Fatalf("another account sees endpoints: %v", list)
	}
}
