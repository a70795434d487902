// Package controllers holds the reconcilers, one package per kind. A
// reconciler turns a CR into engine configuration (compiled selection and
// extraction, resolved sinks and credentials) and a status verdict; it never
// collects or exports anything itself.
package controllers
