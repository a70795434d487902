package sinktest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
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

// foreignWriter: two operators share the sink and the inventory name with
// one cluster label. The second is refused and writes nothing; a writer
// that adopts the first takes the rows over; an emptied inventory frees
// the record for anyone.
func foreignWriter(t *testing.T, h Harness) {
	id := identity(t)
	claimed := func(writer, adopt string) *Binding {
		if h.NewWriter != nil {
			return &Binding{Backend: h.NewWriter(t, "shared", writer, adopt)}
		}
		b := h.New(t, "shared")
		c := sinks.ClaimsOf(b)
		if c == nil {
			t.Fatalf("the backend keeps no writer records (sinks.Claims), and the harness has no NewWriter")
		}
		return &Binding{Backend: sinks.Claimed(b, c, writer, adopt)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	refused := func(b *Binding, holder string, snap *rows.Snapshot) {
		t.Helper()
		before := h.Version(t, id, "shared")
		_, err := b.Export(ctx, snap)
		var fw *sinks.ForeignWriter
		if !errors.As(err, &fw) || fw.Holder != holder || !strings.Contains(err.Error(), sinks.AdoptAnnotation) {
			t.Fatalf("export over %s's rows: %v, want a refusal naming %s and how to take over", holder, err, holder)
		}
		if after := h.Version(t, id, "shared"); after != before {
			t.Fatalf("a refused export wrote to the sink (version %s, then %s)", before, after)
		}
	}

	a := claimed("writer-a", "")
	ra := Rows(12, "a")
	a.mustExport(t, Snap(id, ra))
	refused(claimed("writer-b", ""), "writer-a", Snap(id, Rows(20, "b")))
	expectState(t, h, id, "shared", ra)

	c := claimed("writer-c", "writer-a") // a rebuilt cluster takes the rows over
	rc := Rows(7, "c")
	c.mustExport(t, Snap(id, rc))
	expectState(t, h, id, "shared", rc)
	if h.NewWriter == nil {
		// Records are read before every export, so the first writer's
		// next incremental export sees the takeover at once.
		refused(a, "writer-c", Snap(id, ra[:5]))
	}
	refused(claimed("writer-a", ""), "writer-c", Snap(id, ra)) // and after a restart
	expectState(t, h, id, "shared", rc)

	c.mustExport(t, Snap(id, nil)) // emptied: the rows belong to no one
	d := claimed("writer-d", "")
	d.mustExport(t, Snap(id, ra[:3]))
	expectState(t, h, id, "shared", ra[:3])
}

// keepTargets: after a restart, target "cart" has not listed (a scope
// denies it, its profile has a typo), so nobody has observed its rows. A
// partial snapshot exports shop's changes and leaves cart's rows exactly
// as the sink holds them; once cart lists, a complete export makes the
// sink exact. A backend that cannot keep one target's rows apart (a
// document holding every row) says so, and its binding waits instead.
func keepTargets(t *testing.T, h Harness) {
	id := identity(t)
	shop, cart := Rows(30, "1"), targetRows("cart", "basket", 10, "1")
	(&Binding{Backend: h.New(t, "")}).mustExport(t, Snap(id, append(slices.Clone(shop), cart...)))
	b := &Binding{Backend: h.New(t, "")} // a new process
	if !sinks.KeepsTargets(b.Backend) {
		if !h.WholeObjects {
			t.Fatal("a backend that writes a unit per row cannot keep the rows of a target that has not listed")
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	messages := func() int {
		if h.Messages == nil {
			return 0
		}
		return h.Messages(t, id, "")
	}

	// Nothing changed: nothing is written.
	v, m := h.Version(t, id, ""), messages()
	ack, err := b.Export(ctx, Snap(id, shop).Keeping([]string{"cart"}))
	if err != nil {
		t.Fatalf("partial export, nothing changed: %v", err)
	}
	h.wrote(t, ack, 0, "a partial export of unchanged rows")
	if got := h.Version(t, id, ""); got != v || messages() != m {
		t.Fatalf("a partial export of unchanged rows changed the server's state: version %s -> %s, %d messages", v, got, messages()-m)
	}
	expectState(t, h, id, "", append(slices.Clone(shop), cart...))

	// Shop changes 3 rows and loses 3: those are written; cart's rows stay.
	next := mixed(shop, 0, 3, "2")[:27]
	if _, err := b.Export(ctx, Snap(id, next).Keeping([]string{"cart"})); err != nil {
		t.Fatalf("partial export: %v", err)
	}
	if h.Messages != nil {
		if n := messages() - m; n != 6 {
			t.Errorf("a partial export of 3 updates and 3 deletes published %d messages, want 6 (and no tombstone of a kept row)", n)
		}
	}
	got := map[string]bool{}
	for _, s := range h.State(t, id, "") {
		got[Canonical(t, s)] = true
	}
	has := func(r *rows.Row) bool { return got[Canonical(t, string(r.JSON()))] }
	for _, r := range cart {
		if !has(r) {
			t.Fatalf("the kept target's row %s/%s is gone or changed", r.Namespace, r.Name)
		}
	}
	for _, r := range next {
		if !has(r) {
			t.Fatalf("shop's row %s/%s was not exported", r.Namespace, r.Name)
		}
	}
	// A file that names no target outlives its row until the complete
	// export; nothing else may be there.
	want := 0
	if h.Untargeted {
		want = 3
	}
	if extra := len(got) - len(cart) - len(next); extra != want {
		t.Fatalf("the sink holds %d rows beside the snapshot's and the kept ones, want %d", extra, want)
	}

	// Cart lists again, without 2 of its rows: the sink is exact.
	all := append(slices.Clone(next), cart[:8]...)
	b.mustExport(t, Snap(id, all))
	expectState(t, h, id, "", all)
}
