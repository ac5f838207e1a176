// Package contract holds an HTTP test suite to the OpenAPI document its
// server serves: every request and response that passes through Wrap is
// validated with pb33f/libopenapi-validator (a maintained OpenAPI 3.1
// validator), and every event of an event stream against the schema of
// its kind. An undocumented status is a fault, and so is an undocumented
// field wherever the document closes an object (additionalProperties:
// false, as every apprun shape does) and an undocumented header that is
// not plain HTTP. It is imported by tests only.
package contract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
)

// maxBody bounds what is kept of one request or response body.
const maxBody = 8 << 20

// bodyLimit is the API's request body limit (httpapi's edge).
const bodyLimit = 1 << 20

// Checker validates traffic against one document and keeps what it saw.
type Checker struct {
	v   validate // the document's validators (validate.go)
	ops []route

	mu       sync.Mutex
	seen     map[string]int // "operationId status" → responses
	problems []string
}

type route struct {
	method, id string
	path       *regexp.Regexp
	statuses   []string
	headers    map[string][]string // status → its documented headers, lower case
	codes      map[string][]string // status → the error codes its x-error-codes lists
}

// plainHeaders are response headers that are HTTP's or the edge's
// security headers, not the API's contract.
var plainHeaders = []string{"content-type", "content-length", "date", "cache-control", "connection", "vary",
	"transfer-encoding", "x-content-type-options", "x-frame-options", "referrer-policy",
	"content-security-policy", "x-accel-buffering"}

// New builds a checker for the OpenAPI document doc (JSON).
func New(doc []byte) (*Checker, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, err
	}
	model, err := d.BuildV3Model()
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(d, config.WithFormatAssertions())
	if len(errs) > 0 {
		return nil, fmt.Errorf("contract: %v", errs)
	}
	val := &pb33f{v: v, sv: schema_validation.NewSchemaValidator(config.WithFormatAssertions()), events: map[string]*base.Schema{}}
	c := &Checker{v: val, seen: map[string]int{}}
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		pattern := "^" + regexp.MustCompile(`\\\{[^/]+\\\}`).ReplaceAllString(regexp.QuoteMeta(path), `[^/]+`) + "$"
		for method, op := range item.GetOperations().FromOldest() {
			r := route{method: strings.ToUpper(method), id: op.OperationId, path: regexp.MustCompile(pattern),
				headers: map[string][]string{}, codes: map[string][]string{}}
			for code, resp := range op.Responses.Codes.FromOldest() {
				r.statuses = append(r.statuses, code)
				if resp.Extensions != nil {
					if n, ok := resp.Extensions.Get("x-error-codes"); ok && n != nil {
						var codes []string
						if err := n.Decode(&codes); err != nil {
							return nil, fmt.Errorf("contract: %s %s %s: x-error-codes: %v", method, path, code, err)
						}
						r.codes[code] = codes
					}
				}
				if resp.Headers != nil {
					for name := range resp.Headers.KeysFromOldest() {
						r.headers[code] = append(r.headers[code], strings.ToLower(name))
					}
				}
			}
			c.ops = append(c.ops, r)
		}
	}
	for name, proxy := range model.Model.Components.Schemas.FromOldest() {
		if kind, ok := strings.CutPrefix(name, "Event."); ok {
			val.events[kind] = proxy.Schema()
		}
	}
	if len(c.ops) == 0 || len(val.events) == 0 {
		return nil, fmt.Errorf("contract: the document has %d operations and %d event schemas", len(c.ops), len(val.events))
	}
	return c, nil
}

func (c *Checker) operation(r *http.Request) *route {
	for i, op := range c.ops {
		if op.method == r.Method && op.path.MatchString(r.URL.Path) {
			return &c.ops[i]
		}
	}
	return nil
}

// Wrap returns next with every request to a documented operation checked.
// Each fault goes to onFault (as well as to Problems).
func (c *Checker) Wrap(next http.Handler, onFault func(string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := c.operation(r)
		if op == nil || r.ContentLength > bodyLimit {
			// Not an operation; or a body over the API's limit, which the
			// edge refuses through http.MaxBytesReader: that tells net/http
			// to close the connection gracefully only when it holds the
			// server's own ResponseWriter, so such a request is not wrapped.
			next.ServeHTTP(w, r)
			return
		}
		// The body is kept as the handler reads it (reading it first would
		// take the handler's own deadlines on slow bodies away); on a
		// success the handler has read all of it.
		reqBody := &teeBody{ReadCloser: r.Body}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = reqBody
		}
		check := r.Clone(context.Background())
		checkWith := func(resp *http.Response, body []byte) {
			kept := reqBody.kept()
			check.Body = io.NopCloser(bytes.NewReader(kept))
			for _, f := range c.check(op, check, len(kept) > maxBody, resp, body) {
				c.fault(f)
				if onFault != nil {
					onFault(f)
				}
			}
		}
		rec := &recorder{w: w, done: func(raw []byte) {
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), check)
			if err != nil {
				return // the client left before the head was written
			}
			body, _ := io.ReadAll(resp.Body)
			checkWith(resp, body)
		}}
		next.ServeHTTP(rec, r)
		if resp := rec.response(); resp != nil {
			checkWith(resp, rec.body.Bytes())
		}
	})
}

// check returns the faults of one exchange.
func (c *Checker) check(op *route, r *http.Request, hugeBody bool, resp *http.Response, body []byte) (faults []string) {
	fault := func(format string, args ...any) { faults = append(faults, fmt.Sprintf(format, args...)) }
	what := fmt.Sprintf("%s %s → %d", r.Method, r.URL.RequestURI(), resp.StatusCode)
	status := strconv.Itoa(resp.StatusCode)
	c.mu.Lock()
	c.seen[op.id+" "+status]++
	c.mu.Unlock()
	if !slices.Contains(op.statuses, status) {
		fault("%s: status %s is not documented for %s (documented: %s)", what, status, op.id, strings.Join(op.statuses, ", "))
		return faults
	}
	for name := range resp.Header {
		lower := strings.ToLower(name)
		if !slices.Contains(plainHeaders, lower) && !slices.Contains(op.headers[status], lower) {
			fault("%s: header %s is not documented for this answer", what, name)
		}
	}
	if resp.StatusCode < 300 && !hugeBody {
		if why := c.v.request(r); why != "" {
			fault("%s: answered with success, yet the document refuses the request: %s", what, why)
		}
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = io.NopCloser(strings.NewReader(""))
		resp.Header.Set("Content-Type", "text/event-stream")
		if why := c.v.response(r, resp); why != "" {
			fault("%s: %s", what, why)
		}
		return append(faults, c.checkStream(what, body)...)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if why := c.v.response(r, resp); why != "" {
		fault("%s: %s\nbody: %.600s", what, why, body)
	}
	if codes := op.codes[status]; len(codes) > 0 {
		// Every error answer is components/schemas/Error; which of its
		// codes this answer may carry is the answer's x-error-codes.
		var env struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &env) == nil && !slices.Contains(codes, env.Error.Code) {
			fault("%s: error code %q is not among this answer's documented codes (%s)", what, env.Error.Code, strings.Join(codes, ", "))
		}
	}
	return faults
}

// checkStream checks each event of a stream: a documented kind, an id,
// and data that its kind's schema accepts.
func (c *Checker) checkStream(what string, body []byte) (faults []string) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), maxBody)
	var id, kind, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if kind != "" || data != "" {
				faults = append(faults, c.checkEvent(what, id, kind, data)...)
			}
			id, kind, data = "", "", ""
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			kind = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
	return faults
}

func (c *Checker) checkEvent(what, id, kind, data string) (faults []string) {
	fault := func(format string, args ...any) { faults = append(faults, fmt.Sprintf(format, args...)) }
	if !c.v.known(kind) {
		fault("%s: event %q (id %s) is not a documented kind", what, kind, id)
		return faults
	}
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		fault("%s: event %s has id %q, not a sequence", what, kind, id)
	}
	if why := c.v.event(kind, data); why != "" {
		fault("%s: event %s (id %s): %s\ndata: %.600s", what, kind, id, why, data)
	}
	return faults
}

func (c *Checker) fault(f string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.problems) < 100 {
		c.problems = append(c.problems, f)
	}
}

// Problems returns the faults found so far and forgets them.
func (c *Checker) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.problems
	c.problems = nil
	return p
}

// Seen returns how many responses each "operationId status" pair had.
func (c *Checker) Seen() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.seen))
	for k, n := range c.seen {
		out[k] = n
	}
	return out
}

// Operations lists the document's operation ids with their success
// statuses (2xx), as "operationId status".
func (c *Checker) Operations() []string {
	var out []string
	for _, op := range c.ops {
		for _, st := range op.statuses {
			if strings.HasPrefix(st, "2") {
				out = append(out, op.id+" "+st)
			}
		}
	}
	slices.Sort(out)
	return out
}

// teeBody keeps what the handler reads of a request body.
type teeBody struct {
	io.ReadCloser
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	if b.buf.Len() <= maxBody {
		b.buf.Write(p[:n])
	}
	b.mu.Unlock()
	return n, err
}

func (b *teeBody) kept() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
