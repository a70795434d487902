package backends

import (
	"testing"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// An event sink's spec.messages wins; without it the operator's
// --event-messages decides, perRow when unset.
func TestEventMessagesDefault(t *testing.T) {
	for _, tc := range []struct {
		spec, operator string
		envelope       bool
	}{
		{"", "", false}, {"", "perRow", false}, {"", "envelope", true},
		{"perRow", "envelope", false}, {"envelope", "perRow", true}, {"envelope", "", true},
	} {
		s := &kollectv1alpha1.KollectEventSink{Spec: kollectv1alpha1.KollectEventSinkSpec{Type: "kafka", Messages: tc.spec}}
		if got := envelopes(s, Env{EventMessages: tc.operator}); got != tc.envelope {
			t.Errorf("spec %q, operator %q: envelope %v, want %v", tc.spec, tc.operator, got, tc.envelope)
		}
	}
}
