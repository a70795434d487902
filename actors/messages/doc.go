// Package messages holds the immutable messages that cross actor
// boundaries: rows flowing from Target actors to Inventory actors, and the
// subscriptions that link them. Messages are pointer structs that no
// receiver modifies.
package messages
