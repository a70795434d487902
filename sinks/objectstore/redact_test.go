package objectstore

import (
	"errors"
	"strings"
	"testing"

	"gocloud.dev/blob/memblob"

	"kollect.dev/kollect/sinks"
)

// A credential a driver echoes into an error never reaches status or
// logs; whether the error is permanent survives the redaction.
func TestErrorsNeverQuoteCredentials(t *testing.T) {
	s, err := New(Config{Bucket: memblob.OpenBucket(nil), Redact: []string{"s3cr3t-key-value", ""}})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []error{errors.New("signature for s3cr3t-key-value failed"), sinks.Permanent(errors.New("bad key s3cr3t-key-value"))} {
		out := s.redact(in)
		if strings.Contains(out.Error(), "s3cr3t") || !strings.Contains(out.Error(), "[REDACTED]") {
			t.Errorf("%q became %q", in, out)
		}
		if errors.Is(in, sinks.ErrPermanent) != errors.Is(out, sinks.ErrPermanent) {
			t.Errorf("%q: permanence lost", in)
		}
	}
	if e := errors.New("nothing secret"); s.redact(e) != e { //nolint:errorlint // the very same error, not one it wraps
		t.Error("an error without credentials was rewritten")
	}
}
