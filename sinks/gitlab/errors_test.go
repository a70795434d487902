package gitlab

import (
	"strings"
	"testing"
)

// An error answer's body reaches status only as a GitLab error's message:
// an endpoint that is not GitLab (an internal service a tenant points the
// sink at) gets none of its page repeated.
func TestErrorMessageRepeatsOnlyGitLabErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
		absent           string
	}{
		{"gitlab message", `{"message":"403 Forbidden - branch is protected"}`, ": 403 Forbidden - branch is protected", ""},
		{"gitlab error", `{"error":"invalid_token"}`, ": invalid_token", ""},
		{"gitlab field errors", `{"message":{"branch":["is invalid"]}}`, `: {"branch":["is invalid"]}`, ""},
		{"an internal page", "<html>internal admin: db password hunter2</html>", "", "hunter2"},
		{"plain text", "root:x:0:0:root:/root:/bin/bash", "", "root:x"},
		{"json of another shape", `{"items":[{"secret":"hunter2"}]}`, "", "hunter2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := errorMessage([]byte(tc.body))
			if got != tc.want {
				t.Fatalf("errorMessage = %q, want %q", got, tc.want)
			}
			if tc.absent != "" && strings.Contains(got, tc.absent) {
				t.Fatalf("the body leaks: %q", got)
			}
		})
	}
	if got := errorMessage([]byte(`{"message":"` + strings.Repeat("x", 500) + `"}`)); len([]rune(got)) > 170 {
		t.Fatalf("a long message is kept whole (%d runes)", len([]rune(got)))
	}
}
