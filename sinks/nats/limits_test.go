package nats_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"kollect.dev/kollect/internal/servers/natstest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/events"
	"kollect.dev/kollect/sinks/nats"
)

// exportOnce exports snap through a new sink (a started operator) and
// closes it.
func exportOnce(t *testing.T, cfg nats.Config, snap *rows.Snapshot) sinks.Ack {
	t.Helper()
	s, err := nats.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ack, err := s.Export(context.Background(), rows.Diff(nil, snap))
	if err != nil {
		t.Fatal(err)
	}
	return ack
}

// A stream Kollect creates drops messages by age (nats.Config.MaxAge); one
// it finds keeps its own limits.
func TestACreatedStreamHasAMaximumAge(t *testing.T) {
	ts := natstest.Start(t)
	id := rows.Identity{Namespace: "team", Name: "inv"}
	exportOnce(t, nats.Config{URL: ts.URL(), Subject: "a", Stream: "aged", MaxAge: time.Hour}, sinktest.Snap(id, sinktest.Rows(1, "1")))
	info, err := stream(t, ts.URL(), "aged").Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxAge != time.Hour {
		t.Fatalf("the stream's max age is %v, want 1h", info.Config.MaxAge)
	}
	exportOnce(t, nats.Config{URL: ts.URL(), Subject: "a", Stream: "aged", MaxAge: time.Minute}, sinktest.Snap(id, sinktest.Rows(1, "1")))
	if info, _ := stream(t, ts.URL(), "aged").Info(context.Background()); info.Config.MaxAge != time.Hour {
		t.Fatalf("a sink changed the max age of a stream it found to %v", info.Config.MaxAge)
	}
}

// A stream's limits dropped the messages after a quiet inventory's
// checkpoint, and an object was deleted while the operator was down. The
// restarted sink still deletes it: the stale checkpoint names the key, and
// what it names is trusted for keys, not for content (every live row is
// published again).
func TestAStaleCheckpointStillDeletesWhatItNames(t *testing.T) {
	ts := natstest.Start(t)
	ctx := context.Background()
	cfg := nats.Config{URL: ts.URL(), Subject: "shared", Stream: "limited"}
	quiet, busy := rows.Identity{Namespace: "team-q", Name: "inv"}, rows.Identity{Namespace: "team-b", Name: "inv"}
	mine := sinktest.Rows(10, "1")
	exportOnce(t, cfg, sinktest.Snap(quiet, mine))
	exportOnce(t, cfg, sinktest.Snap(busy, sinktest.Rows(100, "1")))
	st := stream(t, cfg.URL, cfg.Stream)
	if err := st.Purge(ctx, jetstream.WithPurgeSequence(50)); err != nil { // as a max age would: the oldest go
		t.Fatal(err)
	}
	if ack := exportOnce(t, cfg, sinktest.Snap(quiet, mine[1:])); ack.Written != 10 {
		t.Fatalf("the restarted sink published %d messages, want 9 upserts and 1 delete", ack.Written)
	}
	gone := events.Scope{Inventory: quiet}.Key(mine[0])
	deleted := false
	for _, m := range readAll(t, cfg.URL, cfg.Stream) {
		if m.Header.Get(events.HeaderKey) == gone && m.Header.Get(events.HeaderChange) == events.Delete {
			deleted = true
		}
	}
	if !deleted {
		t.Fatalf("no delete of %s was published: a stale checkpoint was ignored", gone)
	}
}

// While the operator runs, a quiet inventory's checkpoint is renewed at the
// stream's end, so the busy inventory's messages can age out without
// making it stale: after the whole stream is dropped, the restarted sink
// republishes nothing.
func TestAQuietInventorysCheckpointIsRenewed(t *testing.T) {
	ts := natstest.Start(t)
	ctx := context.Background()
	cfg := nats.Config{URL: ts.URL(), Subject: "shared", Stream: "renewed", MaxAge: time.Hour, RefreshEvery: 100 * time.Millisecond}
	quiet, busy := rows.Identity{Namespace: "team-q", Name: "inv"}, rows.Identity{Namespace: "team-b", Name: "inv"}
	mine := sinktest.Snap(quiet, sinktest.Rows(10, "1"))
	running, err := nats.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := running.Export(ctx, rows.Diff(nil, mine)); err != nil {
		t.Fatal(err)
	}
	exportOnce(t, cfg, sinktest.Snap(busy, sinktest.Rows(100, "1")))
	st := stream(t, cfg.URL, cfg.Stream)
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	end := info.State.LastSeq
	// The renewal writes a checkpoint at the stream's end: wait for it by
	// asking a restarted sink, with the history dropped, whether it knows.
	time.Sleep(time.Second)
	running.Close()
	if err := st.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := st.Info(ctx); info.State.FirstSeq != end+1 {
		t.Fatalf("after the purge the stream starts at %d, want %d", info.State.FirstSeq, end+1)
	}
	if ack := exportOnce(t, cfg, mine); ack.Written != 0 {
		t.Fatalf("a restart republished %d messages: the quiet inventory's checkpoint was not renewed", ack.Written)
	}
}
