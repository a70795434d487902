package sinks_test

import (
	"context"
	"fmt"
	"sort"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// table is the smallest database backend: it applies each delta and
// acknowledges how many rows it holds. A delta without Prev (the first
// export, or after a restart) is a full reconcile: whatever the table
// holds that is not in Next goes.
type table struct{ rows map[rows.Key]string }

func (t *table) Export(_ context.Context, d *rows.Delta) (sinks.Ack, error) {
	if d.Full() {
		keep := map[rows.Key]bool{}
		for _, r := range d.Next.Rows {
			keep[r.Key()] = true
		}
		for k := range t.rows {
			if !keep[k] {
				delete(t.rows, k)
			}
		}
	}
	for _, r := range d.Upserts {
		t.rows[r.Key()] = fmt.Sprint(r.Attributes().Get("image"))
	}
	for _, r := range d.Deletes {
		delete(t.rows, r.Key())
	}
	return sinks.Ack{Rows: len(t.rows), Written: len(d.Upserts) + len(d.Deletes), Changed: true}, nil
}

// A backend receives deltas and says what it holds; the sink actor keeps
// the snapshot it acknowledged and sends the next delta from there.
func ExampleBackend() {
	row := func(name, image string) *rows.Row {
		r, _ := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "shop", TargetName: "deployments", Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: "shop", Name: name, UID: "uid-" + name}, rows.AttributesOf(map[string]any{"image": image}))
		return r
	}
	id := rows.Identity{Namespace: "shop", Name: "inventory", Generation: 1}
	first := rows.NewSnapshot(id, []*rows.Row{row("api", "api:1"), row("web", "web:1")}, time.Now())
	second := rows.NewSnapshot(id, []*rows.Row{row("api", "api:2")}, time.Now())

	var b sinks.Backend = &table{rows: map[rows.Key]string{}}
	ack, _ := b.Export(context.Background(), rows.Diff(nil, first))
	fmt.Println("first export: holds", ack.Rows, "wrote", ack.Written)
	ack, _ = b.Export(context.Background(), rows.Diff(first, second))
	fmt.Println("second export: holds", ack.Rows, "wrote", ack.Written)

	held := b.(*table).rows
	var images []string
	for _, v := range held {
		images = append(images, v)
	}
	sort.Strings(images)
	fmt.Println(images)
	// Output:
	// first export: holds 2 wrote 2
	// second export: holds 1 wrote 2
	// [api:2]
}
