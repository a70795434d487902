package kafka_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kollect.dev/kollect/internal/servers/kafkatest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/events"
	"kollect.dev/kollect/sinks/kafka"
)

func readAll(t *testing.T, fc *kafkatest.Cluster, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := kafkatest.ReadAll(ctx, fc.Brokers(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

var header = kafka.Header

func scoped(rs []*kgo.Record, id rows.Identity, cluster string) []*kgo.Record {
	var out []*kgo.Record
	for _, r := range rs {
		if header(r, events.HeaderCluster) == cluster && header(r, events.HeaderInventory) == id.Namespace+"/"+id.Name {
			out = append(out, r)
		}
	}
	return out
}

// fold is what a consumer of the compacted topic sees: the latest value
// per key, tombstones removing it.
func fold(t *testing.T, rs []*kgo.Record) map[string]string {
	live := map[string]string{}
	for _, r := range rs {
		if r.Value == nil {
			if header(r, events.HeaderChange) != events.Delete {
				t.Fatalf("tombstone for %s is not marked as a delete", r.Key)
			}
			delete(live, string(r.Key))
			continue
		}
		var body struct {
			ChangeID string          `json:"changeId"`
			Key      string          `json:"key"`
			Row      json.RawMessage `json:"row"`
		}
		if err := json.Unmarshal(r.Value, &body); err != nil {
			t.Fatal(err)
		}
		if body.Key != string(r.Key) || body.ChangeID != header(r, events.HeaderChangeID) || header(r, events.HeaderSchema) != rows.SchemaVersion {
			t.Fatalf("record key, headers and body disagree: %s %s", r.Key, r.Value)
		}
		live[string(r.Key)] = string(body.Row)
	}
	return live
}

func TestKafkaConformance(t *testing.T) {
	fc := kafkatest.Start(t)
	const topic = "inventory.changes"
	sinktest.Run(t, sinktest.Harness{
		NewWriter: func(t *testing.T, cluster, writer, adopt string) sinks.Backend {
			s, err := kafka.New(kafka.Config{Brokers: fc.Brokers(), Topic: topic, Cluster: cluster, DeliveryTimeout: 5 * time.Second, Writer: writer, Adopt: adopt})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return s
		},
		New: func(t *testing.T, cluster string) sinks.Backend {
			s, err := kafka.New(kafka.Config{Brokers: fc.Brokers(), Topic: topic, Cluster: cluster, DeliveryTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return s
		},
		State: func(t *testing.T, id rows.Identity, cluster string) []string {
			var out []string
			for _, v := range fold(t, scoped(readAll(t, fc, topic), id, cluster)) {
				out = append(out, v)
			}
			return out
		},
		Version: func(t *testing.T, id rows.Identity, cluster string) string {
			return strconv.Itoa(len(scoped(readAll(t, fc, topic), id, cluster)))
		},
		Messages: func(t *testing.T, id rows.Identity, cluster string) int {
			return len(scoped(readAll(t, fc, topic), id, cluster))
		},
		Stop: func(*testing.T) { fc.Stop() },
		Start: func(t *testing.T) {
			if err := fc.Restart(); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// TestCompactedTopicKeepsTheLatestRow: compaction (of the closed segments;
// like Kafka, kfake leaves the active one alone) keeps the latest record per
// key, so the topic still folds to the live rows, and a restarted sink
// recovers from it without republishing.
func TestCompactedTopicKeepsTheLatestRow(t *testing.T) {
	fc := kafkatest.Start(t)
	ctx := context.Background()
	id := rows.Identity{Namespace: "default", Name: "inv"}
	b := &sinktest.Binding{}
	s, err := kafka.New(kafka.Config{Brokers: fc.Brokers(), Topic: "compacted"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b.Backend = s
	base := sinktest.Rows(20, "1")
	for _, rs := range [][]*rows.Row{base, sinktest.Rows(20, "2"), sinktest.Rows(20, "3")[:15]} {
		if _, err := b.Export(ctx, sinktest.Snap(id, rs)); err != nil {
			t.Fatal(err)
		}
	}
	before := len(readAll(t, fc, "compacted"))
	if before != 20+20+15+5 {
		t.Fatalf("topic holds %d records before compaction, want 60", before)
	}
	fc.Compact()
	after := readAll(t, fc, "compacted")
	live := fold(t, after)
	if len(after) >= before || len(live) != 15 {
		t.Fatalf("after compaction: %d records (before %d), %d live keys; want fewer records and the 15 live rows", len(after), before, len(live))
	}
	for _, r := range sinktest.Rows(20, "3")[:15] {
		if got := live[events.Scope{Inventory: id}.Key(r)]; got != string(r.JSON()) {
			t.Fatalf("compacted topic does not hold the latest %s: %s", r.Name, got)
		}
	}
	fresh, _ := kafka.New(kafka.Config{Brokers: fc.Brokers(), Topic: "compacted"})
	defer fresh.Close()
	ack, err := fresh.Export(ctx, rows.Diff(nil, sinktest.Snap(id, sinktest.Rows(20, "3")[:15])))
	if err != nil || ack.Written != 0 {
		t.Fatalf("restart on a compacted topic republished %d records (err %v)", ack.Written, err)
	}
}

func TestExistingModeNeedsTheTopic(t *testing.T) {
	fc := kafkatest.Start(t)
	s, _ := kafka.New(kafka.Config{Brokers: fc.Brokers(), Topic: "absent", Existing: true})
	defer s.Close()
	_, err := s.Export(context.Background(), rows.Diff(nil, sinktest.Snap(rows.Identity{Namespace: "a", Name: "b"}, nil)))
	if !errors.Is(err, sinks.ErrPermanent) {
		t.Fatalf("want a permanent error naming the topic, got %v", err)
	}
}
