package rows_test

import (
	"fmt"
	"time"

	"kollect.dev/kollect/model/rows"
)

// A sink receives a delta: what changed between the snapshot it last
// acknowledged and the next one. Only the changed row and the deleted one
// are written; the unchanged row costs nothing.
func ExampleDiff() {
	row := func(name, image string) *rows.Row {
		r, _ := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "shop", TargetName: "deployments", Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: "shop", Name: name, UID: "uid-" + name}, rows.AttributesOf(map[string]any{"image": image}))
		return r
	}
	id := rows.Identity{Namespace: "shop", Name: "inventory", Generation: 1}
	api, web, cart := row("api", "api:1"), row("web", "web:1"), row("cart", "cart:1")
	before := rows.NewSnapshot(id, []*rows.Row{api, web, cart}, time.Now())
	after := rows.NewSnapshot(id, []*rows.Row{api, row("web", "web:2")}, time.Now())

	d := rows.Diff(before, after)
	for _, r := range d.Upserts {
		fmt.Println("upsert", r.Name, r.Attributes().Get("image"))
	}
	for _, r := range d.Deletes {
		fmt.Println("delete", r.Name)
	}
	fmt.Println("full reconcile:", rows.Diff(nil, after).Full())
	// Output:
	// upsert web web:2
	// delete cart
	// full reconcile: true
}
