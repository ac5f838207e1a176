package projections

// Seal is seal, for tests that write records as the store would.
var Seal = seal

// UnsyncedMarker and BootID are the marker beside a file whose commits
// are not fsynced, and what it holds while this kernel runs.
var (
	UnsyncedMarker = unsyncedMarker
	BootID         = bootID
)
