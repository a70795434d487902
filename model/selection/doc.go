// Package selection decides which objects a target collects: namespace include/exclude lists and selectors, the
// watch-label gate and OptIn mode, and either the legacy label selector and
// names or the OR-ed resourceRules with their CEL match policies.
//
// A Target is compiled once per target generation and then only evaluated.
// This package imports only pipeline/extract.
package selection
