package kafka_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"kollect.dev/kollect/internal/servers/kafkatest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/kafka"
)

// After a restart, the inventories of one process on one topic read it
// about once between them, not once each; every one still recovers its
// exact state, a change another writer made after the first read
// included, and republishes nothing; one recovered again reads only the
// topic's tail.
func TestInventoriesOnOneTopicReadItOnceAfterARestart(t *testing.T) {
	fc := kafkatest.Start(t)
	ctx := context.Background()
	cfg := kafka.Config{Brokers: fc.Brokers(), Topic: "shared", Cluster: "prod"}
	const teams = 20
	snaps := make([]*rows.Snapshot, teams)
	for i := range teams {
		id := rows.Identity{Namespace: fmt.Sprintf("team-%02d", i), Name: "inv"}
		snaps[i] = sinktest.Snap(id, sinktest.Rows(50, "1"))
		s, err := kafka.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if ack, err := s.Export(ctx, rows.Diff(nil, snaps[i])); err != nil || ack.Written != 50 {
			t.Fatalf("team %d: first export wrote %d (%v), want 50", i, ack.Written, err)
		}
		s.Close()
	}

	// The restarted process: one Clients, so the sinks share the read.
	fromStart := fc.FetchesFrom(0)
	clients := &sinks.Clients{}
	shared := cfg
	var readBack atomic.Int64
	shared.Clients, shared.Read = clients, func(n int) { readBack.Add(int64(n)) }
	restarted := make([]*kafka.Sink, teams)
	for i := range teams {
		s, err := kafka.New(shared)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		restarted[i] = s
	}
	if ack, err := restarted[0].Export(ctx, rows.Diff(nil, snaps[0])); err != nil || ack.Written != 0 {
		t.Fatalf("team 0 after the restart wrote %d (%v), want nothing", ack.Written, err)
	}
	oneRead := fromStart() // one fetch from the start per partition
	if oneRead == 0 {
		t.Fatal("the first recovery fetched nothing from the topic's start")
	}
	// Meanwhile another writer (the old leader, say) changes team 1's rows.
	old, err := kafka.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	changed := sinktest.Snap(snaps[1].Inventory, sinktest.Rows(50, "2"))
	if ack, err := old.Export(ctx, rows.Diff(snaps[1], changed)); err != nil || ack.Written != 50 {
		t.Fatalf("the other writer wrote %d (%v), want 50", ack.Written, err)
	}
	old.Close()
	snaps[1] = changed
	for i := 1; i < teams; i++ {
		if ack, err := restarted[i].Export(ctx, rows.Diff(nil, snaps[i])); err != nil || ack.Written != 0 {
			t.Fatalf("team %d after the restart wrote %d (%v), want nothing: its recovery missed what the topic holds", i, ack.Written, err)
		}
	}
	if n := fromStart(); n != oneRead {
		t.Errorf("%d fetches from the topic's start for %d inventories, want %d (one read)", n, teams, oneRead)
	}
	// The bytes read back (fetch responses, as Config.Read counts them)
	// are about one whole read of the topic, not one per inventory.
	var whole atomic.Int64
	afterRestart, meter := readBack.Load(), kafka.FetchMeter(func(n int) { whole.Add(int64(n)) })
	if err := kafka.ReadTopic(ctx, []kgo.Opt{kgo.SeedBrokers(fc.Brokers()...), kgo.WithHooks(meter)}, "shared", func(*kgo.Record) {}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d inventories read back %d bytes; one read of the topic is %d", teams, afterRestart, whole.Load())
	if got, one := afterRestart, whole.Load(); got < one/2 || got > 2*one {
		t.Errorf("%d inventories read back %d bytes, one read of the topic is %d: want about one read", teams, got, one)
	}
	base := fromStart()
	// A second full export of one inventory (an export retried after a
	// failure) is answered from the image and what the topic got since,
	// not from a new read from the topic's start: it sees its own last
	// export, and the third sees the second's deletes.
	gone := sinktest.Snap(snaps[2].Inventory, sinktest.Rows(40, "1"))
	if ack, err := restarted[2].Export(ctx, rows.Diff(nil, gone)); err != nil || ack.Written != 10 {
		t.Fatalf("a second full export wrote %d (%v), want the 10 deletes", ack.Written, err)
	}
	if ack, err := restarted[2].Export(ctx, rows.Diff(nil, gone)); err != nil || ack.Written != 0 {
		t.Fatalf("a third full export of the same rows wrote %d (%v), want nothing: the image missed the second's deletes", ack.Written, err)
	}
	if n := fromStart() - base; n != 0 {
		t.Errorf("%d fetches from the topic's start after a scope recovered again, want none", n)
	}
}
