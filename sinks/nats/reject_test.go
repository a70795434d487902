package nats_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"kollect.dev/kollect/internal/servers/natstest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/nats"
)

// A message over the server's max_payload is set aside and reported; the
// other changes of the export are published.
func TestAMessageOverTheServerLimitIsSetAside(t *testing.T) {
	ts := natstest.Start(t, func(o *server.Options) { o.MaxPayload = 4096 })
	s, err := nats.New(nats.Config{URL: ts.URL(), Subject: "inv", Stream: "limits"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := rows.Identity{Namespace: "default", Name: "inv"}
	rs := sinktest.Rows(5, "1")
	big, err := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "default", TargetName: "t", Version: "v1", Kind: "ConfigMap"}, Namespace: "default", Name: "huge",
		UID: "uid-huge"}, rows.AttributesOf(map[string]any{"blob": strings.Repeat("x", 8000)}))
	if err != nil {
		t.Fatal(err)
	}
	ack, err := s.Export(context.Background(), rows.Diff(nil, sinktest.Snap(id, append(rs, big))))
	if err != nil {
		t.Fatalf("one oversized message failed the export: %v", err)
	}
	if len(ack.Rejected) != 1 || !strings.Contains(ack.Rejected[0].Key, "huge") || !strings.Contains(ack.Rejected[0].Reason, "max_payload") {
		t.Fatalf("want the huge row set aside with the reason, got %+v", ack.Rejected)
	}
	if n := len(readAll(t, ts.URL(), "limits")); n != 5 || ack.Written != 5 {
		t.Fatalf("stream holds %d messages (ack says %d), want the 5 others", n, ack.Written)
	}
}
