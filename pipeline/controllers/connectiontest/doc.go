// Package connectiontest reconciles KollectConnectionTests: one probe of
// one sink, its result and latency in status, and the test's deletion a
// while after it completed.
package connectiontest
