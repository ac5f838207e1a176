package engine

// Limits are the rate and concurrency limits of spec §8. Zero disables one.
type Limits struct {
	CreatePerMinute    int // run creations per API key
	ReadsPerMinute     int // reads per API key
	OwnerActiveRuns    int // active runs per account
	PlatformActiveRuns int // active runs, all accounts
}
