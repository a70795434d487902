package sinktest

import (
	"context"
	"slices"
	"testing"
	"time"
)

func firstExport(t *testing.T, h Harness) {
	id := identity(t)
	b := &Binding{Backend: h.New(t, "")}
	rs := Rows(50, "1")
	ack := b.mustExport(t, Snap(id, rs))
	h.wrote(t, ack, 50, "first export")
	expectState(t, h, id, "", rs)
	if h.Messages != nil {
		if n := h.Messages(t, id, ""); n != 50 {
			t.Errorf("published %d messages, want one per row (50)", n)
		}
	}
}

func updateSome(t *testing.T, h Harness) {
	id := identity(t)
	b := &Binding{Backend: h.New(t, "")}
	base := Rows(40, "1")
	b.mustExport(t, Snap(id, base))
	before := 0
	if h.Messages != nil {
		before = h.Messages(t, id, "")
	}
	next := mixed(base, 10, 15, "2")
	ack := b.mustExport(t, Snap(id, next))
	h.wrote(t, ack, 5, "update of 5 rows")
	expectState(t, h, id, "", next)
	if h.Messages != nil {
		if n := h.Messages(t, id, "") - before; n != 5 {
			t.Errorf("update of 5 rows published %d messages", n)
		}
	}
}

func deleteSome(t *testing.T, h Harness) {
	id := identity(t)
	b := &Binding{Backend: h.New(t, "")}
	base := Rows(40, "1")
	b.mustExport(t, Snap(id, base))
	next := append(slices.Clone(base[:20]), base[27:]...)
	ack := b.mustExport(t, Snap(id, next))
	h.wrote(t, ack, 7, "deleting 7 rows")
	expectState(t, h, id, "", next)
}

func empty(t *testing.T, h Harness) {
	id := identity(t)
	b := &Binding{Backend: h.New(t, "")}
	b.mustExport(t, Snap(id, Rows(35, "1")))
	ack := b.mustExport(t, Snap(id, nil))
	h.wrote(t, ack, 35, "an empty snapshot after 35 rows")
	expectState(t, h, id, "", nil)
}

func sameTwice(t *testing.T, h Harness) {
	id := identity(t)
	b := &Binding{Backend: h.New(t, "")}
	rs := Rows(45, "1")
	b.mustExport(t, Snap(id, rs))
	v := h.Version(t, id, "")
	ack := b.mustExport(t, Snap(id, rs))
	h.wrote(t, ack, 0, "an identical export")
	if got := h.Version(t, id, ""); got != v {
		t.Errorf("identical export changed the server's state: version %s -> %s", v, got)
	}
	expectState(t, h, id, "", rs)
}

func restart(t *testing.T, h Harness) {
	id := identity(t)
	base := Rows(50, "1")
	(&Binding{Backend: h.New(t, "")}).mustExport(t, Snap(id, base))
	v := h.Version(t, id, "")

	// A new process: the backend does not know what the server holds.
	again := &Binding{Backend: h.New(t, "")}
	ack := again.mustExport(t, Snap(id, base))
	h.wrote(t, ack, 0, "after a restart, an unchanged snapshot")
	if got := h.Version(t, id, ""); got != v {
		t.Errorf("after a restart an unchanged snapshot changed the server's state: %s -> %s", v, got)
	}
	before := 0
	if h.Messages != nil {
		before = h.Messages(t, id, "")
	}
	next := mixed(base, 0, 3, "2")[:47] // 3 changed, 3 deleted
	fresh := &Binding{Backend: h.New(t, "")}
	ack = fresh.mustExport(t, Snap(id, next))
	h.wrote(t, ack, 6, "after a restart, 3 updates and 3 deletes")
	expectState(t, h, id, "", next)
	if h.Messages != nil {
		if n := h.Messages(t, id, "") - before; n != 6 {
			t.Errorf("after a restart 6 changes published %d messages", n)
		}
	}
}

func twoClusters(t *testing.T, h Harness) {
	id := identity(t)
	east := &Binding{Backend: h.New(t, "east")}
	west := &Binding{Backend: h.New(t, "west")}
	// Same inventory, same object UIDs (a restored or cloned cluster),
	// different content.
	er, wr := Rows(40, "east"), Rows(40, "west")
	east.mustExport(t, Snap(id, er))
	west.mustExport(t, Snap(id, wr))
	expectState(t, h, id, "east", er)
	expectState(t, h, id, "west", wr)
	west.mustExport(t, Snap(id, wr[:10]))
	expectState(t, h, id, "east", er)
	expectState(t, h, id, "west", wr[:10])
	east.mustExport(t, Snap(id, nil))
	expectState(t, h, id, "east", nil)
	expectState(t, h, id, "west", wr[:10])
}

func outage(t *testing.T, h Harness) {
	id := identity(t)
	b := &Binding{Backend: h.New(t, "")}
	base := Rows(60, "1")
	b.mustExport(t, Snap(id, base))

	h.Stop(t)
	stopped := true
	defer func() {
		if stopped {
			h.Start(t)
		}
	}()
	next := mixed(base, 5, 25, "2")[:50]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	start := time.Now()
	_, err := b.Export(ctx, Snap(id, next))
	cancel()
	t.Logf("export while the server was down failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if err == nil {
		t.Fatal("export succeeded while the server was down")
	}
	if b.Acked.Rows == nil || len(b.Acked.Rows) != 60 {
		t.Fatal("a failed export was recorded as acknowledged")
	}
	h.Start(t)
	stopped = false
	back := time.Now()

	// Retry as the sink actor does, with the delta from the last
	// acknowledged snapshot, until the server takes it.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = b.Export(ctx, Snap(id, next))
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("export still failing 60s after the server came back: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("caught up %v after the server came back", time.Since(back).Round(time.Millisecond))
	expectState(t, h, id, "", next)
	final := mixed(next, 30, 35, "3")
	b.mustExport(t, Snap(id, final))
	expectState(t, h, id, "", final)
}
