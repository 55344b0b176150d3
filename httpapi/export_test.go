package httpapi

// ReferenceDecode is the oracle decodeNewPlant is fuzzed against, for the
// handler's fuzz test in package httpapi_test.
var ReferenceDecode = referenceDecode
