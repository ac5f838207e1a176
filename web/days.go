package web

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// dayRange reads ?from= and ?to= (YYYY-MM-DD, days in UTC, both
// included), as the run history and the statement take them. A date that
// is not one is left out, alone, and named; a range that ends before it
// starts is kept (it holds nothing) and said. what is what the range
// holds ("run", "line").
func dayRange(q url.Values, what string) (from, to time.Time, problem string) {
	var problems []string
	parse := func(name, label string) time.Time {
		v := q.Get(name)
		if v == "" {
			return time.Time{}
		}
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("The %s date %q is not a date: write it like 2026-11-23 (year, month, day). It was left out.", label, v))
			return time.Time{}
		}
		return t
	}
	from, to = parse("from", "From"), parse("to", "To")
	if !from.IsZero() && !to.IsZero() && to.Before(from) {
		problems = append(problems, fmt.Sprintf("The From date (%s) is after the To date (%s), so no %s can fall between them: swap the two dates.",
			from.Format(time.DateOnly), to.Format(time.DateOnly), what))
	}
	return from, to, strings.Join(problems, " ")
}

// dayText is a day of a range as a form and a link carry it, "" for none.
func dayText(d time.Time) string {
	if d.IsZero() {
		return ""
	}
	return d.Format(time.DateOnly)
}
