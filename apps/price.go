package apps

import (
	"fmt"
	"slices"
	"strings"
)

// The price rule: a shipped App's price is the sum of what its steps cost.
//
//   - A model step costs by its size, how much it writes: short 5 Credits
//     (a reply, a handful of lines), standard 10 (a page of variants or a
//     brief), long 15 (a whole page, plan or report), extended 25 (a
//     multi-part deliverable such as a sequence or a growth plan).
//   - A tool step that reads one source (web_page, sitemap, feed,
//     changelog) costs 5; github_repo costs 15 (three API reads).
//   - The steps an App runs without a model do not change its price.
//
// TestShippedPricesFollowTheRule holds the shipped catalog to it; an
// operator's own definitions (APPRUN_APPS_DIR) may set any price, and an
// admin changes a price later with a price event.
var (
	sizeCosts = map[string]int64{"short": 5, "standard": 10, "long": 15, "extended": 25}
	sizes     = []string{"short", "standard", "long", "extended"}
	toolCosts = map[string]int64{"web_page": 5, "sitemap": 5, "feed": 5, "changelog": 5, "github_repo": 15}
)

// PriceByRule is what the price rule makes of a definition's steps.
func PriceByRule(d Definition) int64 {
	var p int64
	for _, s := range d.Steps {
		if s.Model != nil {
			p += sizeCosts[s.Model.size()]
		} else {
			p += toolCosts[s.Tool]
		}
	}
	return p
}

func (m *ModelStep) size() string {
	if m.Size == "" {
		return "standard"
	}
	return m.Size
}

func checkSize(m *ModelStep) error {
	if m.Size != "" && !slices.Contains(sizes, m.Size) {
		return fmt.Errorf("size %q: want one of %s", m.Size, strings.Join(sizes, ", "))
	}
	return nil
}
