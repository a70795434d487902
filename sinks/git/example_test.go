package git_test

import (
	"fmt"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/git"
)

// Render shows what a Git sink would write for a snapshot, without a
// remote: here a per-resource layout, one YAML file per object, and the
// commit subject of the export.
func ExampleRender() {
	r, _ := rows.New(rows.Row{Origin: &rows.Origin{TargetNamespace: "shop", TargetName: "deployments", Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: "shop", Name: "api", UID: "uid-api"}, rows.AttributesOf(map[string]any{"image": "api:1"}))
	snap := rows.NewSnapshot(rows.Identity{Namespace: "shop", Name: "inventory", Generation: 1}, []*rows.Row{r}, time.Unix(0, 0))
	out, err := git.Render(git.Config{Layout: git.Layout{Mode: "perResource", Content: "attributes", Format: "yaml", Cluster: "east"}}, snap)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.SamplePaths)
	fmt.Println(out.Subject[:len("chore(east/shop/inventory): export 1 items")])
	// Output:
	// [east/shop/deployment/api.yaml]
	// chore(east/shop/inventory): export 1 items
}
