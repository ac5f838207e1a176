package engine

// Codes is the error table, in errors.json's order, for the tests.
var Codes = codes
