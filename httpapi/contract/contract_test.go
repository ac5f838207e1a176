package contract_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apprun/apprun/httpapi/contract"
)

const doc = `{"openapi":"3.1.0","info":{"title":"t","version":"1"},
"paths":{
 "/things":{"post":{"operationId":"addThing",
   "requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object","required":["name"],"additionalProperties":false,"properties":{"name":{"type":"string","maxLength":5}}}}}},
   "responses":{"201":{"description":"made","headers":{"Location":{"required":true,"schema":{"type":"string"}}},
     "content":{"application/json":{"schema":{"type":"object","required":["id"],"additionalProperties":false,"properties":{"id":{"type":"string"}}}}}},
     "400":{"description":"bad","x-error-codes":["invalid_request"],"content":{"application/json":{"schema":{"type":"object"}}}}}}},
 "/things/{id}/events":{"get":{"operationId":"thingEvents",
   "responses":{"200":{"description":"events","content":{"text/event-stream":{"schema":{"type":"string"}}}}}}}},
"components":{"schemas":{"Event.started":{"type":"object","required":["at"],"additionalProperties":false,"properties":{"at":{"type":"string"}}}}}}`

// Each rule of the checker, shown by a server that breaks it once.
func TestTheCheckerFindsEveryKindOfFault(t *testing.T) {
	c, err := contract.New([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method, path, body string
		handler                  http.HandlerFunc
		want                     string // "" = no fault
	}{
		{"a documented answer", "POST", "/things", `{"name":"a"}`, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "/things/1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			io.WriteString(w, `{"id":"1"}`)
		}, ""},
		{"an undocumented status", "POST", "/things", `{"name":"a"}`, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(409)
		}, "status 409 is not documented"},
		{"an undocumented field", "POST", "/things", `{"name":"a"}`, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "/things/1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			io.WriteString(w, `{"id":"1","secret":"x"}`)
		}, "secret"},
		{"an undocumented header", "POST", "/things", `{"name":"a"}`, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "/things/1")
			w.Header().Set("X-Extra", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			io.WriteString(w, `{"id":"1"}`)
		}, "header X-Extra is not documented"},
		{"a missing required header", "POST", "/things", `{"name":"a"}`, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			io.WriteString(w, `{"id":"1"}`)
		}, "Location"},
		{"success for a request the document refuses", "POST", "/things", `{"name":"toolong"}`, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "/things/1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			io.WriteString(w, `{"id":"1"}`)
		}, "the document refuses the request"},
		{"a refusal of a request the document refuses", "POST", "/things", `{"name":"toolong"}`, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"code":"invalid_request","message":"m"}}`)
		}, ""},
		{"an error code the answer does not list", "POST", "/things", `{"name":"toolong"}`, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"code":"app_not_found","message":"m"}}`)
		}, `error code "app_not_found" is not among this answer's documented codes`},
		{"an undocumented event kind", "GET", "/things/1/events", "", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: 1\nevent: canceled\ndata: {}\n\n")
		}, `event "canceled" (id 1) is not a documented kind`},
		{"event data off its schema", "GET", "/things/1/events", "", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: 1\nevent: started\ndata: {\"at\":\"x\",\"extra\":1}\n\n")
		}, "event started (id 1)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var faults []string
			h := func(w http.ResponseWriter, r *http.Request) {
				io.ReadAll(r.Body) // as every handler of a request with a body
				tc.handler(w, r)
			}
			srv := httptest.NewServer(c.Wrap(http.HandlerFunc(h), func(f string) { faults = append(faults, f) }))
			defer srv.Close()
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			srv.Close() // the handler has returned: its check is done
			all := strings.Join(faults, "\n")
			if tc.want == "" && all != "" {
				t.Fatalf("faults for a documented exchange: %s", all)
			}
			if tc.want != "" && !strings.Contains(all, tc.want) {
				t.Fatalf("faults %q do not name %q", all, tc.want)
			}
		})
	}
	c.Problems()
}

// Streams checked at once: the validators are shared, and libopenapi
// renders a schema without a lock, so the checker serializes them (under
// -race this test caught it).
func TestStreamsCheckedAtOnceDoNotRace(t *testing.T) {
	for range 10 { // a fresh checker each time: the race was in the first validations
		c, err := contract.New([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(c.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 20 {
				io.WriteString(w, "id: "+strconv.Itoa(i+1)+"\nevent: started\ndata: {\"at\":\"x\"}\n\n")
			}
		}), nil))
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				resp, err := http.Get(srv.URL + "/things/1/events")
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		srv.Close()
		if p := c.Problems(); len(p) > 0 {
			t.Fatalf("faults: %v", p)
		}
	}
}
