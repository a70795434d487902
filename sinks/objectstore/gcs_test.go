package objectstore_test

import (
	"context"
	"testing"

	"kollect.dev/kollect/internal/servers/gcstest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/objectstore"
)

// TestGCSConformance runs the sink conformance suite against a GCS server
// through the native JSON API (gcsblob), as a gs:// sink with a custom
// endpoint does.
func TestGCSConformance(t *testing.T) {
	srv := gcstest.Start(t)
	for _, c := range []config{configs[0], configs[1]} {
		t.Run(c.name, func(t *testing.T) {
			bucket := "gcs-" + sanitize(c.name)
			srv.CreateBucket(bucket)
			get := func(t *testing.T, key string) ([]byte, string, bool) {
				b, enc, err := srv.Object(bucket, key)
				if err != nil {
					return nil, "", false
				}
				return b, enc, true
			}
			sinktest.Run(t, harness(c, get, func(t *testing.T) *objectstore.Config {
				hc, err := sinks.HTTPClient(nil, nil, false)
				if err != nil {
					t.Fatal(err)
				}
				b, err := objectstore.OpenGCS(context.Background(), objectstore.Endpoint{BaseURL: srv.URL, Bucket: bucket}, nil, false, hc)
				if err != nil {
					t.Fatal(err)
				}
				return &objectstore.Config{Bucket: b, Name: "gs://" + bucket}
			}, srv))
		})
	}
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
