package git

import (
	"strings"
	"testing"
)

func TestRedactDropsTheWholeUserinfo(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://git.example.com/team/inventory.git", "https://git.example.com/team/inventory.git"},
		{"https://kollect:s3cret@git.example.com/team/inventory.git", "https://git.example.com/team/inventory.git"},
		{"https://kollect:p@ss@word@git.example.com/team/inventory.git", "https://git.example.com/team/inventory.git"},
		{"https://kollect:pa/ss@git.example.com/x.git", "https://git.example.com/x.git"},
		{"ssh://git@git.example.com:22/x.git", "ssh://git.example.com:22/x.git"},
		{"file:///tmp/remote.git", "file:///tmp/remote.git"},
	} {
		got := redact(tc.in)
		if got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, secret := range []string{"s3cret", "ss@word", "pa/ss"} {
			if strings.Contains(got, secret) {
				t.Errorf("redact(%q) keeps %q", tc.in, secret)
			}
		}
	}
}
