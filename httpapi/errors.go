package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/apprun/apprun/engine"
)

// statusOf is the one table from error code to HTTP status.
var statusOf = map[engine.Code]int{
	engine.CodeInvalidRequest:      http.StatusBadRequest,
	engine.CodeUnauthorized:        http.StatusUnauthorized,
	engine.CodeInsufficientCredits: http.StatusPaymentRequired,
	engine.CodeAppNotFound:         http.StatusNotFound,
	engine.CodeRunNotFound:         http.StatusNotFound,
	engine.CodeAccountNotFound:     http.StatusNotFound,
	engine.CodeKeyNotFound:         http.StatusNotFound,
	engine.CodeEmailTaken:          http.StatusConflict,
	engine.CodeRunFinished:         http.StatusConflict,
	engine.CodeNotFound:            http.StatusNotFound,
	engine.CodeMethodNotAllowed:    http.StatusMethodNotAllowed,
	engine.CodeNotAcceptable:       http.StatusNotAcceptable,
	engine.CodePricingNotReady:     http.StatusConflict,
	engine.CodeIdempotencyBusy:     http.StatusConflict,
	engine.CodeIdempotencyReused:   http.StatusUnprocessableEntity,
	engine.CodeInvalidInput:        http.StatusUnprocessableEntity,
	engine.CodeInvalidBrandContext: http.StatusUnprocessableEntity,
	engine.CodeRateLimited:         http.StatusTooManyRequests,
	engine.CodeConcurrencyLimit:    http.StatusTooManyRequests,
	engine.CodeInternal:            http.StatusInternalServerError,
	engine.CodeCreditsNotSold:      http.StatusNotFound,
	engine.CodePaymentProvider:     http.StatusBadGateway,
	engine.CodeInvalidSignature:    http.StatusBadRequest,
}

// StatusOf is the HTTP status of a domain error code: the one table both
// the API and the website answer with.
func StatusOf(c engine.Code) int {
	if st, ok := statusOf[c]; ok {
		return st
	}
	return http.StatusInternalServerError
}

type envelope struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    engine.Code `json:"code"`
	Message string      `json:"message"`
}

// writeError writes err as the error envelope. Domain errors show their
// code and message; anything else is logged and shown as internal_error,
// 503 when the event log is unreachable or busy (safe to retry), else 500.
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	var de *engine.Error
	if !errors.As(err, &de) {
		status := http.StatusInternalServerError
		msg := "unexpected server error; safe to retry"
		if unavailable(err) {
			status, msg = http.StatusServiceUnavailable, "the service is busy or its event log is unreachable; safe to retry"
			w.Header().Set("Retry-After", "1")
		}
		logger.Error("request failed", "method", r.Method, "route", routeOf(r), "err", err)
		writeJSON(w, status, envelope{errorBody{engine.CodeInternal, msg}})
		return
	}
	status, ok := statusOf[de.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
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
	writeJSON(w, status, envelope{errorBody{de.Code, de.Message}})
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
	return errors.Is(err, engine.ErrUnavailable) || errors.Is(err, engine.ErrAmbiguous) || errors.Is(err, context.DeadlineExceeded)
}

func errorf(code engine.Code, format string, args ...any) error {
	return engine.Errorf(code, format, args...)
}
