package httpapi

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/apprun/apprun/engine"
)

// Enveloped puts a handler that is not apprun's own (the MCP SDK's
// Streamable HTTP transport) behind the error envelope: an answer it
// refuses in plain text (http.Error: a GET with no server stream, a
// message that is not JSON-RPC, an unsupported protocol version, another
// media type) is answered instead as the API's envelope, with its status
// and its words. Every other answer, event streams included, passes
// through untouched.
func Enveloped(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pw := &plainErrorWriter{ResponseWriter: w}
		next.ServeHTTP(pw, r)
		if pw.status == 0 {
			return
		}
		h := w.Header()
		h.Del("Content-Type")
		h.Del("X-Content-Type-Options")
		writeJSON(w, pw.status, envelope{errorBody{Code: codeOfStatus(pw.status), Message: plainMessage(pw.body.Bytes(), pw.status)}})
	})
}

// codeOfStatus is the envelope's code for a status another handler chose.
func codeOfStatus(status int) engine.Code {
	switch {
	case status == http.StatusMethodNotAllowed:
		return engine.CodeMethodNotAllowed
	case status == http.StatusNotAcceptable:
		return engine.CodeNotAcceptable
	case status == http.StatusNotFound:
		return engine.CodeNotFound
	case status == http.StatusUnauthorized:
		return engine.CodeUnauthorized
	case status >= 500:
		return engine.CodeInternal
	}
	return engine.CodeInvalidRequest
}

// plainMessage is a plain-text refusal's words, bounded, or the status's
// name when it has none (a server error's text is not shown).
func plainMessage(body []byte, status int) string {
	msg := strings.TrimSpace(string(bytes.ToValidUTF8(body, nil)))
	if msg == "" || status >= 500 {
		return http.StatusText(status)
	}
	return msg
}

// maxPlainError bounds what is kept of a plain-text refusal.
const maxPlainError = 1 << 10

// plainErrorWriter holds back a plain-text answer of 400 or more, for
// Enveloped to answer in its place.
type plainErrorWriter struct {
	http.ResponseWriter
	status int // the held-back answer's, 0 while passing through
	wrote  bool
	body   bytes.Buffer
}

func (w *plainErrorWriter) WriteHeader(code int) {
	if !w.wrote && code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status, w.wrote = code, true
		return
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *plainErrorWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.status != 0 {
		if room := maxPlainError - w.body.Len(); room > 0 {
			w.body.Write(b[:min(len(b), room)])
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *plainErrorWriter) Flush() {
	if w.status != 0 {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *plainErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
