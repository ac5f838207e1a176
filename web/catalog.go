package web

import (
	"net/http"
	"slices"
	"strings"
)

// catalogView is the App catalog as the home and Apps pages show it:
// grouped by category, by name within each, and narrowed by a search
// (?q=, every word must match the name, description, category or slug).
// The page's script narrows the same cards as one types (data-search
// holds what a card matches); without script the form sends ?q=.
type catalogView struct {
	Query  string
	Groups []appGroup
	Shown  int
	Total  int
}

func (s *Site) catalog(r *http.Request) (catalogView, error) {
	q := strings.TrimSpace(strings.ToValidUTF8(r.URL.Query().Get("q"), ""))
	if len(q) > 200 {
		q = q[:200]
	}
	var list []appView
	total := 0
	for _, a := range s.cfg.Engine.Catalog().Runnable() {
		v, err := s.view(a, origin(r))
		if err != nil {
			return catalogView{}, err
		}
		total++
		if matches(v, q) {
			list = append(list, v)
		}
	}
	slices.SortStableFunc(list, func(a, b appView) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	return catalogView{Query: q, Groups: groupApps(list), Shown: len(list), Total: total}, nil
}

// SearchText is what a card matches, lower case.
func (v appView) SearchText() string {
	return strings.ToLower(strings.Join([]string{v.Name, v.Description, v.Category, v.Slug}, " "))
}

// matches says whether every word of q is in the App's search text.
func matches(v appView, q string) bool {
	text := v.SearchText()
	for _, w := range strings.Fields(strings.ToLower(q)) {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}
