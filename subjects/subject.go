// Package subjects is the event log's layout: the one stream's subjects,
// one per entity, and what each is about. Its newest message is the
// entity's state, so a write checked on a subject's last sequence is a
// compare-and-set on that entity. The service writes these subjects, the
// read models and the audit read them back. Of the domain, only the
// audit fold (engine/audit.go) reads them, to tell a message's kind.
package subjects

import (
	"strconv"
)

// Stream and subject names. One stream holds every fact that matters; each
// entity is one subject, so its last message is its state and a
// compare-and-set on that subject serialises its writers.
const (
	ExecutorConsumer = "apprun-executor"

	AccountPrefix     = "apprun.acct."      // + account_id: ledger events
	RunPrefix         = "apprun.run."       // + run_no: the run's event log
	JobPrefix         = "apprun.job."       // + run_no: work item for the executor
	KeyPrefix         = "apprun.key."       // + key_id: key created / revoked
	KeyCountPrefix    = "apprun.keys."      // + account_id: how many active keys it has (MaxActiveKeys)
	KeyUsePrefix      = "apprun.keyuse."    // + key_id: when the key was last used (one message, rolled up)
	PricePrefix       = "apprun.price."     // + app slug: price set / recalibrating
	PriceCopyPrefix   = "apprun.pricecopy." // + app slug.index: a copy of the price that admissions check (price.go)
	BrandPrefix       = "apprun.brand."     // + brand_context_id
	SlotPrefix        = "apprun.slot."      // + index: platform-wide active-run slots
	IdemPrefix        = "apprun.idem."      // + account_id.key-hash: Idempotency-Key records
	ExpiredPrefix     = "apprun.expired."   // + run_no: the run's log was removed after retention
	LoginPrefix       = "apprun.login."     // + hash of the email: the website login
	HookPrefix        = "apprun.hook."      // + run_no: a webhook delivery to make
	WHSecretPrefix    = "apprun.whsec."     // + account_id: the webhook signing secret
	WHDeliveryPrefix  = "apprun.whdel."     // + account_id.run_no.target: a delivery's state
	WHEndpointsPrefix = "apprun.whep."      // + account_id: the account's webhook endpoints

	PurchasePrefix  = "apprun.purchase."  // + payment reference: the purchase record
	PaymentPIPrefix = "apprun.payment."   // + payment intent id: its purchase's reference
	UnmatchedPrefix = "apprun.unmatched." // + provider event id: a notice nobody could be granted
	// Checkpoint holds the ledger's signed checkpoints, chained
	// (ledger/checkpoint.go).
	Checkpoint = "apprun.ledger.checkpoint"
)

func Account(id string) string { return AccountPrefix + id }
func Run(runNo string) string  { return RunPrefix + runNo }
func Job(runNo string) string  { return JobPrefix + runNo }
func Key(id string) string     { return KeyPrefix + id }
func KeyUse(id string) string  { return KeyUsePrefix + id }
func KeyCount(accountID string) string {
	return KeyCountPrefix + accountID
}
func Price(slug string) string { return PricePrefix + slug }
func PriceCopy(slug string, i int) string {
	return PriceCopyPrefix + slug + "." + strconv.Itoa(i)
}
func Brand(id string) string { return BrandPrefix + id }
func Slot(i int) string      { return SlotPrefix + strconv.Itoa(i) }
func WebhookEndpoints(accountID string) string {
	return WHEndpointsPrefix + accountID
}

// All are the subjects of every entity in the event log.
func All() []string {
	return []string{AccountPrefix + "*", RunPrefix + "*", JobPrefix + "*", KeyPrefix + "*", PricePrefix + "*", PriceCopyPrefix + "*.*", BrandPrefix + "*", SlotPrefix + "*", IdemPrefix + "*.*", ExpiredPrefix + "*", LoginPrefix + "*",
		HookPrefix + "*", WHSecretPrefix + "*", WHDeliveryPrefix + ">", WHEndpointsPrefix + "*", KeyCountPrefix + "*", KeyUsePrefix + "*",
		PurchasePrefix + "*", PaymentPIPrefix + "*", UnmatchedPrefix + "*", Checkpoint}
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

// Parse returns the kind of an event-log subject and the id in it.
func Parse(subject string) (Kind, string) {
	for _, p := range []struct {
		prefix string
		kind   Kind
	}{{RunPrefix, KindRun}, {AccountPrefix, KindAccount}, {JobPrefix, KindJob}, {KeyPrefix, KindKey},
		{PricePrefix, KindPrice}, {BrandPrefix, KindBrand}, {SlotPrefix, KindSlot}, {ExpiredPrefix, KindExpired},
		{KeyUsePrefix, KindKeyUse}} {
		if len(subject) > len(p.prefix) && subject[:len(p.prefix)] == p.prefix {
			return p.kind, subject[len(p.prefix):]
		}
	}
	return KindOther, ""
}

func Expired(runNo string) string { return ExpiredPrefix + runNo }

// Of is the event-log subject of the entity of kind k with id: the
// inverse of Parse (a load tool writes synthetic logs with it).
func Of(k Kind, id string) string {
	prefix := map[Kind]string{KindAccount: AccountPrefix, KindRun: RunPrefix, KindJob: JobPrefix, KindKey: KeyPrefix,
		KindPrice: PricePrefix, KindBrand: BrandPrefix, KindSlot: SlotPrefix, KindExpired: ExpiredPrefix, KindKeyUse: KeyUsePrefix}[k]
	return prefix + id
}
