package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"kollect.dev/kollect/internal/servers/kafkatest"
	"kollect.dev/kollect/sinks/kafka"
)

// A partition that stalls partway (its leader moving in a rolling
// restart) is read to its end offset once it answers again, never taken
// as complete at the records read so far: a recovery that stopped there
// would miss the deletes the rest of the partition records.
func TestRecoveryReadsAStalledPartitionToItsEnd(t *testing.T) {
	c := kafkatest.Start(t)
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "stall"); err != nil {
		t.Fatal(err)
	}
	const batches = 5
	for i := range batches {
		for p := range int32(2) {
			// One produce a batch, so the partition ends in several.
			r := &kgo.Record{Topic: "stall", Partition: p, Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	refused := c.StallFetches(0, 1, 6*time.Second)
	read := map[int32]int{}
	readCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = kafka.ReadTopic(readCtx, []kgo.Opt{kgo.SeedBrokers(c.Brokers()...)}, "stall", func(r *kgo.Record) { read[r.Partition]++ })
	if err != nil {
		t.Fatal(err)
	}
	if refused() == 0 {
		t.Fatal("no fetch was stalled: the test did not test a stall")
	}
	if read[0] != batches || read[1] != batches {
		t.Errorf("read %d records of partition 0 and %d of partition 1, want %d of each", read[0], read[1], batches)
	}
}
