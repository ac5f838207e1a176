package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
)

// StatusOf is the HTTP status of a domain error code: its entry in the one
// error table (engine/errors.json), which both the API and the website
// answer with. A code with no entry is a 500 (the tests keep every code in
// the table).
func StatusOf(c engine.Code) int {
	if info, ok := c.Info(); ok {
		return info.Status
	}
	return http.StatusInternalServerError
}

type envelope struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    engine.Code `json:"code"`
	Message string      `json:"message"`
	// Limit names the limit a 429 hit (engine.Error.Limit).
	Limit string `json:"limit,omitempty"`
}

// writeError writes err as the error envelope. Domain errors show their
// code and message; anything else is logged and shown as internal_error,
// 503 when the event log is unreachable or busy (safe to retry), else 500.
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	var de *engine.Error
	if !errors.As(err, &de) {
		status := http.StatusInternalServerError
		msg := defaultMessage(engine.CodeInternal)
		if unavailable(err) {
			status, msg = http.StatusServiceUnavailable, "the service is busy or its event log is unreachable; safe to retry"
			w.Header().Set("Retry-After", "1")
		}
		logger.Error("request failed", "method", r.Method, "route", routeOf(r), "err", err)
		writeJSON(w, status, envelope{errorBody{Code: engine.CodeInternal, Message: msg}})
		return
	}
	status := StatusOf(de.Code)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="apprun"`)
	}
	if r.ContentLength != 0 {
		// A refusal may leave its body unread (always so for a 401 or a
		// 429, judged from the headers): net/http would read on to drain
		// it for a next request, for as long as the client takes. The
		// connection closes with the answer.
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	if status == http.StatusTooManyRequests || de.RetryAfter > 0 {
		ra := int(de.RetryAfter.Seconds())
		if ra < 1 {
			ra = 1
		}
		w.Header().Set("Retry-After", strconv.Itoa(ra))
	}
	if status >= 500 {
		logger.Error("request failed", "method", r.Method, "route", routeOf(r), "err", err)
	}
	msg := de.Message
	if msg == "" {
		msg = defaultMessage(de.Code)
	}
	writeJSON(w, status, envelope{errorBody{Code: de.Code, Message: msg, Limit: de.Limit}})
}

// defaultMessage is the table's message for a code (internal_error's for a
// code with no entry), for an error that carries none of its own.
func defaultMessage(c engine.Code) string {
	info, ok := c.Info()
	if !ok {
		info, _ = engine.CodeInternal.Info()
	}
	return info.Message
}

// refuseUnread answers err to a request whose body it leaves unread: the
// connection closes with the answer, rather than net/http reading on to
// drain the body for a next request.
func (a *API) refuseUnread(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	a.fail(w, r, err)
}

func unavailable(err error) bool {
	return errors.Is(err, port.ErrUnavailable) || errors.Is(err, port.ErrAmbiguous) || errors.Is(err, context.DeadlineExceeded)
}

func errorf(code engine.Code, format string, args ...any) error {
	return engine.Errorf(code, format, args...)
}
