package kafka_test

import (
	"testing"

	"kollect.dev/kollect/internal/servers/kafkatest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/sinks/kafka"
)

// BenchmarkProduceChanges: 10,000 changed rows per export, each one record
// acknowledged by kfake (acks=all, idempotent producer).
func BenchmarkProduceChanges(b *testing.B) {
	fc := kafkatest.Start(b)
	s, err := kafka.New(kafka.Config{Brokers: fc.Brokers(), Topic: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sinktest.BenchChanges(b, s, 10_000)
}
