package apps

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/llm"
)

// A run's record (engine/record.go) is made here, where the calls are: a
// session rides the run's context, records each model exchange and
// source read as it ends (job.Record), and in a replay serves each from
// the recorded run instead (job.Replay), so that no model and no network
// is called. What a replay calls is recorded the same way, and the
// service compares the two records.

// RecordBound is the most of one recorded text (a message, a reply, a
// source's content) a record keeps, in bytes: past it the text is cut and
// the entry marked truncated (the hash and length of the whole are kept).
const RecordBound = 192 << 10

type sessionKey struct{}

// session is one execution's record: what it made so far, and in a
// replay what it serves.
type session struct {
	job   engine.Job
	calls map[string]int                   // entries made, by kind
	serve map[string][]*engine.RecordEntry // a replay's, by kind, in order
}

func newSession(job engine.Job) *session {
	s := &session{job: job, calls: map[string]int{}}
	if job.Replay != nil {
		s.serve = map[string][]*engine.RecordEntry{}
		for _, e := range lastAttempt(job.Replay) {
			s.serve[e.Kind] = append(s.serve[e.Kind], &e)
		}
	}
	return s
}

// lastAttempt is a record's entries from its last start on: a run
// executed again after a crash starts its record again.
func lastAttempt(entries []engine.RecordEntry) []engine.RecordEntry {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Kind == engine.RecordStart {
			return entries[i:]
		}
	}
	return entries
}

func sessionOf(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	if s == nil {
		return &session{calls: map[string]int{}} // a tool run outside an execution (tests): records nothing
	}
	return s
}

func (s *session) replaying() bool { return s.serve != nil }

// record stamps e with its call number and hands it to the job.
func (s *session) record(e engine.RecordEntry) {
	s.calls[e.Kind]++
	e.Call = s.calls[e.Kind]
	if s.job.Record != nil {
		s.job.Record(e)
	}
}

// next is the recorded entry a replay's call of kind gets: the one at the
// same place in the recorded run, or ErrNotRecorded.
func (s *session) next(kind string) (*engine.RecordEntry, error) {
	n := s.calls[kind]
	if n >= len(s.serve[kind]) {
		return nil, fmt.Errorf("%w: %s call %d", engine.ErrNotRecorded, kind, n+1)
	}
	return s.serve[kind][n], nil
}

// withModel is whether the run takes the steps with a model: in a replay
// as the recorded run did, else as the node is configured.
func (s *session) withModel(live bool) bool {
	if s.replaying() {
		if st := s.serve[engine.RecordStart]; len(st) > 0 && st[0].WithModel != nil {
			return *st[0].WithModel
		}
	}
	return live
}

// brandContext is the brand context the run writes for: in a replay the
// recorded one (it may have changed or gone since).
func (s *session) brandContext() *engine.BrandContext {
	if s.replaying() {
		if st := s.serve[engine.RecordStart]; len(st) > 0 {
			return st[0].BrandContext
		}
	}
	return s.job.BrandContext
}

// errorEntry is err as a record keeps it: the run error it stands for, a
// context's end by its own code.
func errorEntry(err error) *engine.RunError {
	var re *engine.RunError
	var out engine.RunError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		out = *re
	case errors.Is(err, context.DeadlineExceeded):
		out = engine.RunError{Code: engine.FailTimeout, Message: err.Error()}
	case errors.Is(err, context.Canceled):
		out = engine.RunError{Code: engine.FailCanceled, Message: err.Error()}
	default:
		out = engine.RunError{Code: engine.FailExecution, Message: err.Error()}
	}
	if len(out.Message) > maxErrorText { // a provider's or a server's text: bounded like any
		out.Message, _ = withinBound(out.Message[:maxErrorText])
	}
	return &out
}

// maxErrorText bounds a recorded error's message.
const maxErrorText = 4 << 10

// replayError is the error a recorded failure replays as.
func replayError(e *engine.RunError) error {
	switch e.Code {
	case engine.FailTimeout:
		return context.DeadlineExceeded
	case engine.FailCanceled:
		return context.Canceled
	}
	return &engine.RunError{Code: e.Code, Message: e.Message, Details: e.Details}
}

// withinBound is text cut so that it takes at most RecordBound bytes
// once encoded as a JSON string (Go escapes <, > and & to six bytes, and
// control characters: an HTML page grows), on a rune's edge, and whether
// it was cut. Three such texts (a model call's messages and its reply),
// the turns of a repair within turnBound, and the rest of an entry stay
// under JetStream's 1 MiB message.
func withinBound(text string) (string, bool) { return withinBytes(text, RecordBound) }

// turnBound bounds each recorded turn of a repair call (an earlier reply
// sent back, what was wrong with it): the earlier reply is whole in its
// own entry, and up to maxRepairs of each pair must fit beside the three
// texts of RecordBound.
const turnBound = RecordBound / 8

// withinBytes is withinBound with another bound.
func withinBytes(text string, bound int) (string, bool) {
	if len(text) <= bound/6 {
		return text, false // no escape takes more than six bytes
	}
	size := 2 // the quotes
	for i, r := range text {
		switch {
		case r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029 || r < 0x20 && r != '\n' && r != '\r' && r != '\t':
			size += 6
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
			size += 2
		case r == utf8.RuneError:
			size += 6 // an invalid byte is written as \ufffd
		default:
			size += utf8.RuneLen(r)
		}
		if size > bound {
			return text[:i], true
		}
	}
	return text, false
}

// sourceEntry records one source read: its body as text (base64 when it
// is not UTF-8), within the bound.
func sourceEntry(asked string, started time.Time, status int, ctype string, body []byte, final *url.URL, err error) engine.RecordEntry {
	e := engine.RecordEntry{Kind: engine.RecordSource, URL: redacted(asked), StartedAt: started, EndedAt: time.Now().UTC(),
		Status: status, ContentType: ctype, Error: errorEntry(err)}
	if final != nil {
		e.FinalURL = redacted(final.String())
	}
	if body != nil {
		sum := sha256.Sum256(body)
		e.Bytes, e.SHA256 = int64(len(body)), hex.EncodeToString(sum[:])
		text := string(body)
		if !utf8.Valid(body) {
			text, e.Base64 = base64.StdEncoding.EncodeToString(body), true
		}
		e.Content, e.Truncated = withinBound(text)
	}
	return e
}

// body is a recorded source's body, or why a replay cannot have it.
func recordedBody(e *engine.RecordEntry) ([]byte, error) {
	if e.Truncated {
		return nil, fmt.Errorf("%w: the source %s was larger than the record keeps (%d bytes)", engine.ErrNotRecorded, e.URL, e.Bytes)
	}
	if e.Base64 {
		return base64.StdEncoding.DecodeString(e.Content)
	}
	return []byte(e.Content), nil
}

// redacted is a URL as a record keeps it: without a user or password (a
// source never gets one: such an address is refused, and recorded so).
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

// ReplayOnly is the model of a catalog that only replays runs (with no
// model configured): a replay never calls it, and a call says so.
var ReplayOnly Model = replayOnly{}

type replayOnly struct{}

func (replayOnly) Complete(context.Context, llm.Request, llm.Watch) (llm.Reply, error) {
	return llm.Reply{}, errors.New("apps: no model is configured; this catalog only replays runs")
}

func (replayOnly) Sent(llm.Request) llm.Sent { return llm.Sent{} }
