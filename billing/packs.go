package billing

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Pack is a number of Credits sold at a price, in the currency's
// smallest unit (cents for usd).
type Pack struct {
	ID       string `json:"id"`
	Credits  int64  `json:"credits"`
	Price    int64  `json:"price"`
	Currency string `json:"currency"`
}

var currencyPattern = regexp.MustCompile(`^[a-z]{3}$`)

// ParsePacks reads APPRUN_CREDIT_PACKS: "credits:price:currency,...",
// e.g. "100:500:usd,500:2000:usd". A pack's id is its three parts
// ("100-500-usd"), so a changed pack is another pack.
func ParsePacks(s string) ([]Pack, error) {
	var out []Pack
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		f := strings.Split(part, ":")
		if len(f) != 3 {
			return nil, fmt.Errorf("credit pack %q: want credits:price:currency, e.g. 100:500:usd", part)
		}
		credits, err1 := strconv.ParseInt(f[0], 10, 64)
		price, err2 := strconv.ParseInt(f[1], 10, 64)
		cur := strings.ToLower(f[2])
		switch {
		case err1 != nil || credits <= 0 || credits > 1_000_000_000:
			return nil, fmt.Errorf("credit pack %q: credits must be a whole number from 1 to 1000000000", part)
		case err2 != nil || price <= 0 || price > 99_999_999:
			return nil, fmt.Errorf("credit pack %q: price must be a whole number of the currency's smallest unit (cents), from 1 to 99999999", part)
		case !currencyPattern.MatchString(cur):
			return nil, fmt.Errorf("credit pack %q: currency must be a three-letter ISO code like usd", part)
		}
		p := Pack{ID: fmt.Sprintf("%d-%d-%s", credits, price, cur), Credits: credits, Price: price, Currency: cur}
		if seen[p.ID] {
			return nil, fmt.Errorf("credit pack %q is listed twice", part)
		}
		seen[p.ID] = true
		out = append(out, p)
	}
	return out, nil
}
