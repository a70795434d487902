// Package endpoint guards sink endpoints against server-side request
// forgery: loopback, link-local, metadata and other
// special addresses are refused, private ranges only when the operator
// allows private sinks. Hostnames are resolved and every address checked.
// This package is a leaf.
package endpoint
