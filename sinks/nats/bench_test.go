package nats_test

import (
	"testing"

	"kollect.dev/kollect/internal/servers/natstest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/sinks/nats"
)

// BenchmarkPublishChanges: 10,000 changed rows per export, each one message
// acknowledged by an embedded JetStream server (file store).
func BenchmarkPublishChanges(b *testing.B) {
	ts := natstest.Start(b)
	s, err := nats.New(nats.Config{URL: ts.URL(), Subject: "bench", Stream: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sinktest.BenchChanges(b, s, 10_000)
}
