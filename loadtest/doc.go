// Command loadtest drives Kollect at large-cluster event rates and reports
// what it measured. Engine mode feeds synthetic informer events straight
// into the actor engine (no API server); cluster mode creates and churns
// objects on a real API server while the operator exports to Git and
// PostgreSQL. Both check correctness (every row arrives, nothing lost or
// duplicated) and write a report; neither asserts a speed.
//
// It is a Go module of its own (its plotting library stays out of the
// operator's module) that builds the operator from the checkout it runs
// in. Run it with `make loadtest SCENARIO=10k`, or `go run . -scenario 10k`
// in this folder.
package main
