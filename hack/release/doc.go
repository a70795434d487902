// Package release tests hack/release.sh, which makes the release artifacts
// (make release): it runs the script for one architecture with a
// throwaway signing key and checks what a user would check.
package release
