// Package collect turns one object into one row: selection, extraction,
// redaction and row encoding, exactly as the operator's Target actors do.
// The pipeline CLI uses the same Evaluator, so there is no second
// implementation of collection. It imports only the pure pipeline packages.
package collect
