package contract

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
)

// validate is what a Checker asks of the OpenAPI validator, in terms that
// name none of libopenapi's types: each answers why the document refuses
// what it is given, or "". A Checker holding libopenapi's types in its
// fields made every package that imports this one compile libopenapi's
// generic code again (about 11,000 functions, 25 s of a race build, in
// each test binary that starts a node).
type validate interface {
	request(r *http.Request) string
	response(r *http.Request, resp *http.Response) string
	known(kind string) bool
	event(kind, data string) string
}

// pb33f is validate by pb33f/libopenapi-validator.
type pb33f struct {
	// mu serializes the validators: libopenapi renders a shared schema
	// without a lock (the race detector caught two streams' events
	// validated at once).
	mu     sync.Mutex
	v      validator.Validator
	sv     schema_validation.SchemaValidator
	events map[string]*base.Schema // event kind → its data's schema
}

func (p *pb33f) request(r *http.Request) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return why(p.v.ValidateHttpRequest(r))
}

func (p *pb33f) response(r *http.Request, resp *http.Response) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return why(p.v.ValidateHttpResponse(r, resp))
}

func (p *pb33f) known(kind string) bool { return p.events[kind] != nil }

func (p *pb33f) event(kind, data string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return why(p.sv.ValidateSchemaString(p.events[kind], data))
}

// why is a validation's refusal in words, or "" when it passed.
func why(ok bool, errs []*verrors.ValidationError) string {
	if ok {
		return ""
	}
	if d := describe(errs); d != "" {
		return d
	}
	return "refused, with no reason given"
}

func describe(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Message)
		if e.Reason != "" && e.Reason != e.Message {
			b.WriteString(": " + e.Reason)
		}
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, " [%s %s]", f.FieldPath, f.Reason)
		}
	}
	return b.String()
}
