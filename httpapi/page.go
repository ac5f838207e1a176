package httpapi

import (
	"net/http"
	"strconv"

	"github.com/apprun/apprun/engine"
)

// page is a list request: ?limit=1..100 (default 20) and ?cursor= from the
// previous page's next_cursor.
type page struct {
	limit  int
	before uint64
}

func pageOf(r *http.Request) (page, error) {
	p := page{limit: 20}
	q := r.URL.Query()
	limit, err := valueOnce(q, "limit")
	if err != nil {
		return p, err
	}
	cursor, err := valueOnce(q, "cursor")
	if err != nil {
		return p, err
	}
	if s := limit; s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return p, errorf(engine.CodeInvalidRequest, "limit must be an integer from 1 to 100")
		}
		p.limit = n
	}
	if s := cursor; s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n == 0 {
			return p, errorf(engine.CodeInvalidRequest, "cursor is not one this API returned")
		}
		p.before = n
	}
	return p, nil
}

// writeList answers {"data":[...]}: an empty list as [], never null.
func writeList[T any](w http.ResponseWriter, data []T) {
	if data == nil {
		data = []T{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
}

// writePage answers {"data":[...],"next_cursor":"…"|null}.
func writePage[T any](w http.ResponseWriter, data []T, next uint64) {
	if data == nil {
		data = []T{}
	}
	var cursor *string
	if next != 0 {
		s := strconv.FormatUint(next, 10)
		cursor = &s
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "next_cursor": cursor})
}
