package kafka_test

import (
	"context"
	"strings"
	"testing"

	"kollect.dev/kollect/internal/servers/kafkatest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/kafka"
)

// A record over the brokers' default message size is set aside and
// reported; the other changes of the export are produced.
func TestARecordOverTheBrokerLimitIsSetAside(t *testing.T) {
	fc := kafkatest.Start(t)
	s, err := kafka.New(kafka.Config{Brokers: fc.Brokers(), Topic: "limits"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := rows.Identity{Namespace: "default", Name: "inv"}
	big, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: "t", Version: "v1", Kind: "ConfigMap"}, Namespace: "default", Name: "huge",
		UID: "uid-huge"}, rows.AttributesOf(map[string]any{"blob": strings.Repeat("x", 1<<20)}))
	if err != nil {
		t.Fatal(err)
	}
	ack, err := s.Export(context.Background(), rows.Diff(nil, sinktest.Snap(id, append(sinktest.Rows(5, "1"), big))))
	if err != nil {
		t.Fatalf("one oversized record failed the export: %v", err)
	}
	if len(ack.Rejected) != 1 || !strings.Contains(ack.Rejected[0].Key, "huge") {
		t.Fatalf("want the huge row set aside, got %+v", ack.Rejected)
	}
	if n := len(readAll(t, fc, "limits")); n != 5 || ack.Written != 5 {
		t.Fatalf("topic holds %d records (ack says %d), want the 5 others", n, ack.Written)
	}
}
