package objectstore_test

import (
	"context"
	"testing"

	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/objectstore"
	"kollect.dev/kollect/sinks/objectstore/gcstest"
	"kollect.dev/kollect/sinks/sinktest"
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
			sinktest.Run(t, sinktest.Harness{
				WholeObjects: true,
				New: func(t *testing.T, cluster string) sinks.Backend {
					hc, err := sinks.HTTPClient(nil, nil, false)
					if err != nil {
						t.Fatal(err)
					}
					b, err := objectstore.OpenGCS(context.Background(), objectstore.Endpoint{BaseURL: srv.URL, Bucket: bucket}, nil, hc)
					if err != nil {
						t.Fatal(err)
					}
					st, err := objectstore.New(objectstore.Config{Bucket: b, Name: "gs://" + bucket, Prefix: "fleet", Cluster: cluster,
						Format: c.format, Compression: c.compression, Layout: c.layout, PathTemplate: c.template})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(st.Close)
					return sinks.Whole(st)
				},
				State: func(t *testing.T, id rows.Identity, cluster string) []string {
					return state(t, get, "fleet", id, cluster)
				},
				Version: func(t *testing.T, id rows.Identity, cluster string) string {
					return version(t, get, "fleet", id, cluster)
				},
				Stop: func(*testing.T) { srv.Stop() },
				Start: func(t *testing.T) {
					if err := srv.Restart(); err != nil {
						t.Fatal(err)
					}
				},
			})
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
