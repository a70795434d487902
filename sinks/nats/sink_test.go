package nats_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"kollect.dev/kollect/internal/servers/natstest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/events"
	"kollect.dev/kollect/sinks/nats"
)

func readAll(t *testing.T, url, stream string) []natstest.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ms, err := natstest.ReadAll(ctx, url, stream)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func scoped(ms []natstest.Message, id rows.Identity, cluster string) []natstest.Message {
	var out []natstest.Message
	for _, m := range ms {
		if m.Header.Get(events.HeaderCluster) == cluster && m.Header.Get(events.HeaderInventory) == id.Namespace+"/"+id.Name {
			out = append(out, m)
		}
	}
	return out
}

func TestNATSConformance(t *testing.T) {
	ts := natstest.Start(t)
	const stream, subject = "kollect_events", "inventory.events"
	sinktest.Run(t, sinktest.Harness{
		NewWriter: func(t *testing.T, cluster, writer, adopt string) sinks.Backend {
			s, err := nats.New(nats.Config{URL: ts.URL(), Subject: subject, Stream: stream, Cluster: cluster, Writer: writer, Adopt: adopt})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return s
		},
		New: func(t *testing.T, cluster string) sinks.Backend {
			s, err := nats.New(nats.Config{URL: ts.URL(), Subject: subject, Stream: stream, Cluster: cluster})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return s
		},
		State: func(t *testing.T, id rows.Identity, cluster string) []string {
			live := map[string]string{}
			for _, m := range scoped(readAll(t, ts.URL(), stream), id, cluster) {
				var body struct {
					Change string          `json:"change"`
					Key    string          `json:"key"`
					Row    json.RawMessage `json:"row"`
				}
				if err := json.Unmarshal(m.Data, &body); err != nil {
					t.Fatal(err)
				}
				if body.Key != m.Header.Get(events.HeaderKey) || body.Change != m.Header.Get(events.HeaderChange) {
					t.Fatalf("body and headers disagree: %s", m.Data)
				}
				if m.Header.Get(natsgo.MsgIdHdr) != m.Header.Get(events.HeaderChangeID) {
					t.Fatalf("Nats-Msg-Id %q is not the change id %q", m.Header.Get(natsgo.MsgIdHdr), m.Header.Get(events.HeaderChangeID))
				}
				if body.Change == events.Delete {
					delete(live, body.Key)
				} else {
					live[body.Key] = string(body.Row)
				}
			}
			out := make([]string, 0, len(live))
			for _, v := range live {
				out = append(out, v)
			}
			return out
		},
		Version: func(t *testing.T, id rows.Identity, cluster string) string {
			return strconv.Itoa(len(scoped(readAll(t, ts.URL(), stream), id, cluster)))
		},
		Messages: func(t *testing.T, id rows.Identity, cluster string) int {
			return len(scoped(readAll(t, ts.URL(), stream), id, cluster))
		},
		Stop: func(*testing.T) { ts.Stop() },
		Start: func(t *testing.T) {
			if err := ts.Restart(); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// TestRepublishedChangeIsDroppedByTheServer: a change published again after
// a lost acknowledgement carries the same Nats-Msg-Id, so the stream keeps
// one copy.
func TestRepublishedChangeIsDroppedByTheServer(t *testing.T) {
	ts := natstest.Start(t)
	s, err := nats.New(nats.Config{URL: ts.URL(), Subject: "inv", Stream: "dedupe"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := rows.Identity{Namespace: "default", Name: "inv"}
	snap := sinktest.Snap(id, sinktest.Rows(10, "1"))
	ctx := context.Background()
	for range 2 { // the sink actor retries with the same delta when an ack was lost
		if _, err := s.Export(ctx, rows.Diff(nil, snap)); err != nil {
			t.Fatal(err)
		}
	}
	// The second export recovered the stream's state first, so it sent
	// nothing; publish the same changes directly to prove the server-side
	// dedupe too.
	nc, _ := natsgo.Connect(ts.URL())
	defer nc.Close()
	js, _ := jetstream.New(nc)
	scope := events.Scope{Inventory: id}
	for _, c := range events.Plan(scope, rows.Diff(nil, snap), nil) {
		m := natsgo.NewMsg("inv")
		m.Data = scope.Body(c, time.Now())
		ack, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(c.ID))
		if err != nil {
			t.Fatal(err)
		}
		if !ack.Duplicate {
			t.Fatalf("change %s was not recognised as a duplicate", c.Key)
		}
	}
	if n := len(readAll(t, ts.URL(), "dedupe")); n != 10 {
		t.Fatalf("stream holds %d messages, want 10", n)
	}
}

func TestExistingModeNeedsTheStream(t *testing.T) {
	ts := natstest.Start(t)
	s, err := nats.New(nats.Config{URL: ts.URL(), Subject: "inv", Stream: "absent", Existing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Export(context.Background(), rows.Diff(nil, sinktest.Snap(rows.Identity{Namespace: "a", Name: "b"}, nil)))
	if err == nil || !errorsIsPermanent(err) {
		t.Fatalf("want a permanent error naming the stream, got %v", err)
	}
}

// A platform's stream that does not capture a sink's subject is left as
// it is: the sink fails, saying what to change, and the stream's subjects
// are still the platform's.
func TestAStreamItFindsIsNeverWidened(t *testing.T) {
	ts := natstest.Start(t)
	nc, err := natsgo.Connect(ts.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "platform", Subjects: []string{"platform.audit"}}); err != nil {
		t.Fatal(err)
	}
	s, err := nats.New(nats.Config{URL: ts.URL(), Subject: "tenant.rows", Stream: "platform"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Export(ctx, rows.Diff(nil, sinktest.Snap(rows.Identity{Namespace: "a", Name: "b"}, sinktest.Rows(1, "1"))))
	if err == nil || !errorsIsPermanent(err) {
		t.Fatalf("want a permanent error, got %v", err)
	}
	st, err := js.Stream(ctx, "platform")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.CachedInfo().Config.Subjects; len(got) != 1 || got[0] != "platform.audit" {
		t.Fatalf("the platform's stream now captures %v", got)
	}
}

// The sinks of one server share one connection when they share Clients
// (a thousand inventories on one NATS server hold one, not a thousand),
// each publishing exactly its own rows; the last to close closes it.
func TestSinksOfOneServerShareAConnection(t *testing.T) {
	ts := natstest.Start(t)
	ctx := context.Background()
	clients := &sinks.Clients{}
	var all []*nats.Sink
	for i := range 5 {
		s, err := nats.New(nats.Config{URL: ts.URL(), Subject: "shared", Stream: "shared", Clients: clients})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
		id := rows.Identity{Namespace: fmt.Sprintf("team-%d", i), Name: "inv"}
		if ack, err := s.Export(ctx, rows.Diff(nil, sinktest.Snap(id, sinktest.Rows(10, "1")))); err != nil || ack.Written != 10 {
			t.Fatalf("team %d wrote %d (%v), want 10", i, ack.Written, err)
		}
	}
	if n := ts.Connections(); n != 1 {
		t.Errorf("%d connections for 5 sinks, want 1", n)
	}
	for _, s := range all {
		s.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for ts.Connections() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections after every sink closed, want 0", ts.Connections())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
