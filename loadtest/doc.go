// Command loadtest drives Kollect at large-cluster event rates and reports
// what it measured. Engine mode feeds synthetic informer events straight
// into the actor engine (no API server); cluster mode creates and churns
// objects on a real API server while the operator exports to Git and
// PostgreSQL. Both check correctness (every row arrives, nothing lost or
// duplicated) and write a report; neither asserts a speed.
//
// Run it with `go run ./loadtest/cmd -scenario loadtest/scenarios/10k.yaml`.
package main
