package engine

import "strconv"

// Stream and subject names. One stream holds every fact that matters; each
// entity is one subject, so its last message is its state and a
// compare-and-set on that subject serialises its writers.
const (
	executorConsumer = "apprun-executor"

	subjAccount     = "apprun.acct."      // + account_id: ledger events
	subjRun         = "apprun.run."       // + run_no: the run's event log
	subjJob         = "apprun.job."       // + run_no: work item for the executor
	subjKey         = "apprun.key."       // + key_id: key created / revoked
	subjKeyCount    = "apprun.keys."      // + account_id: how many active keys it has (MaxActiveKeys)
	subjKeyUse      = "apprun.keyuse."    // + key_id: when the key was last used (one message, rolled up)
	subjPrice       = "apprun.price."     // + app slug: price set / recalibrating
	subjPriceCopy   = "apprun.pricecopy." // + app slug.index: a copy of the price that admissions check (price.go)
	subjBrand       = "apprun.brand."     // + brand_context_id
	subjSlot        = "apprun.slot."      // + index: platform-wide active-run slots
	subjIdem        = "apprun.idem."      // + account_id.key-hash: Idempotency-Key records
	subjExpired     = "apprun.expired."   // + run_no: the run's log was removed after retention
	subjLogin       = "apprun.login."     // + hash of the email: the website login
	subjHook        = "apprun.hook."      // + run_no: a webhook delivery to make
	subjWHSecret    = "apprun.whsec."     // + account_id: the webhook signing secret
	subjWHDelivery  = "apprun.whdel."     // + account_id.run_no.target: a delivery's state
	subjWHEndpoints = "apprun.whep."      // + account_id: the account's webhook endpoints
)

func accountSubject(id string) string { return subjAccount + id }
func runSubject(runNo string) string  { return subjRun + runNo }
func jobSubject(runNo string) string  { return subjJob + runNo }
func keySubject(id string) string     { return subjKey + id }
func keyUseSubject(id string) string  { return subjKeyUse + id }
func keyCountSubject(accountID string) string {
	return subjKeyCount + accountID
}
func priceSubject(slug string) string { return subjPrice + slug }
func priceCopySubject(slug string, i int) string {
	return subjPriceCopy + slug + "." + strconv.Itoa(i)
}
func brandSubject(id string) string { return subjBrand + id }
func slotSubject(i int) string      { return subjSlot + strconv.Itoa(i) }

// StreamSubjects are the subjects of every entity in the event log.
func StreamSubjects() []string {
	return []string{subjAccount + "*", subjRun + "*", subjJob + "*", subjKey + "*", subjPrice + "*", subjPriceCopy + "*.*", subjBrand + "*", subjSlot + "*", subjIdem + "*.*", subjExpired + "*", subjLogin + "*",
		subjHook + "*", subjWHSecret + "*", subjWHDelivery + ">", subjWHEndpoints + "*", subjKeyCount + "*", subjKeyUse + "*",
		subjPurchase + "*", subjPaymentPI + "*", subjUnmatched + "*"}
}

// Kind is what an event-log subject is about.
type Kind int

// Subject kinds.
const (
	KindOther Kind = iota
	KindAccount
	KindRun
	KindJob
	KindKey
	KindPrice
	KindBrand
	KindSlot
	KindExpired
	// KindKeyUse: a key's last use (a KeyEvent of type key_used).
	KindKeyUse
)

// ParseSubject returns the kind of an event-log subject and the id in it.
func ParseSubject(subject string) (Kind, string) {
	for _, p := range []struct {
		prefix string
		kind   Kind
	}{{subjRun, KindRun}, {subjAccount, KindAccount}, {subjJob, KindJob}, {subjKey, KindKey},
		{subjPrice, KindPrice}, {subjBrand, KindBrand}, {subjSlot, KindSlot}, {subjExpired, KindExpired},
		{subjKeyUse, KindKeyUse}} {
		if len(subject) > len(p.prefix) && subject[:len(p.prefix)] == p.prefix {
			return p.kind, subject[len(p.prefix):]
		}
	}
	return KindOther, ""
}

func expiredSubject(runNo string) string { return subjExpired + runNo }

// SubjectOf is the event-log subject of the entity of kind k with id: the
// inverse of ParseSubject (a load tool writes synthetic logs with it).
func SubjectOf(k Kind, id string) string {
	prefix := map[Kind]string{KindAccount: subjAccount, KindRun: subjRun, KindJob: subjJob, KindKey: subjKey,
		KindPrice: subjPrice, KindBrand: subjBrand, KindSlot: subjSlot, KindExpired: subjExpired, KindKeyUse: subjKeyUse}[k]
	return prefix + id
}
