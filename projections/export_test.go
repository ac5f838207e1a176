package projections

// Seal is seal, for tests that write records as the store would.
var Seal = seal
