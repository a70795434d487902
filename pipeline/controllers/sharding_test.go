//go:build integration

package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kollect.dev/kollect/internal/servers/pgtest"
)

// TestAnInventoryOverItsCeilingIsExportedInParts: an inventory whose
// export envelope exceeds its maxExportBytes reaches a Git document sink
// as part documents, in one commit, and a database sink whole under the
// inventory's own name; status and metrics say how many parts. A row that
// alone exceeds the ceiling fails both bindings for good, naming it,
// leaving what they hold untouched, until it goes.
func TestAnInventoryOverItsCeilingIsExportedInParts(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.Start(t)
	bare := t.TempDir() + "/sharded.git"
	bareRepo(t, bare)
	var objs []string
	want := []string{}
	for i := range 12 {
		name := fmt.Sprintf("app-%02d", i)
		want = append(want, name)
		objs = append(objs, deploymentYAML("sharded-apps", name, "shop", "registry.example/"+name+":1"))
	}
	apply(t, namespaceYAML("sharded", "")+"---\n"+namespaceYAML("sharded-apps", "team: sharded")+"---\n"+strings.Join(objs, "---\n"))
	pipeline, _, _ := strings.Cut(pipelineYAML("sharded", bare), "---\napiVersion: kollect.dev/v1alpha1\nkind: KollectInventory")
	apply(t, strings.ReplaceAll(strings.ReplaceAll(pipeline, "team: shop", "team: sharded"),
		"  serialization: {format: yaml}\n  layout: {mode: perResource, content: attributes, pathTemplate: 'namespaces/{sourceNamespace}/{kind}/{sourceName}{extension}'}\n",
		"  serialization: {format: json}\n")+fmt.Sprintf(`---
apiVersion: v1
kind: Secret
metadata: {name: dsn, namespace: sharded}
stringData: {dsn: '%s'}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectDatabaseSink
metadata: {name: warehouse, namespace: sharded}
spec:
  type: postgres
  postgres: {databaseRef: {name: dsn}, table: inventory_items}
`, pg.DSN(""))+`---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: inventory, namespace: sharded}
spec:
  maxExportBytes: 1500
  snapshotSinkRefs: [git]
  databaseSinkRefs: [warehouse]
`)
	partFile := regexp.MustCompile(`^inventory/sharded/inventory\.part-([0-9]{4})-of-([0-9]{4})\.json$`)
	// gitNames reads the names the part documents hold, and how many parts.
	gitNames := func() ([]string, int, error) {
		list, err := git(bare, "ls-tree", "-r", "--name-only", "main")
		if err != nil {
			return nil, 0, fmt.Errorf("%v: %s", err, list)
		}
		var names []string
		paths := strings.Fields(list)
		for _, p := range paths {
			m := partFile.FindStringSubmatch(p)
			if m == nil {
				body, _ := git(bare, "show", "main:"+p)
				return nil, 0, fmt.Errorf("a file that is not a part document: %s (files %v): %.300s", p, paths, body)
			}
			body, err := git(bare, "show", "main:"+p)
			if err != nil {
				return nil, 0, err
			}
			if len(body) > 1500 {
				return nil, 0, fmt.Errorf("%s holds %d bytes, over the 1500 ceiling", p, len(body))
			}
			var env struct {
				PartIndex, PartTotal int
				Items                []struct{ Name string }
			}
			if err := json.Unmarshal([]byte(body), &env); err != nil {
				return nil, 0, err
			}
			if fmt.Sprintf("%04d-%04d", env.PartIndex, env.PartTotal) != m[1]+"-"+m[2] || env.PartTotal != len(paths) {
				return nil, 0, fmt.Errorf("%s says part %d of %d", p, env.PartIndex, env.PartTotal)
			}
			for _, it := range env.Items {
				names = append(names, it.Name)
			}
		}
		slices.Sort(names)
		return names, len(paths), nil
	}
	pgNames := func() ([]string, error) {
		conn, err := pgx.Connect(ctx, pg.DSN(""))
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		rs, err := conn.Query(ctx, `SELECT inventory_name || ':' || (payload->>'name') FROM inventory_items WHERE inventory_namespace = 'sharded' ORDER BY 1`)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rs, pgx.RowTo[string])
	}
	var parts int
	eventually(t, 30*time.Second, "the inventory lands in Git as part documents and whole in Postgres", func() error {
		names, n, err := gitNames()
		if err != nil {
			return err
		}
		if !slices.Equal(names, want) || n < 2 {
			return fmt.Errorf("git: %d parts holding %v", n, names)
		}
		rows, err := pgNames()
		if err != nil {
			return err
		}
		if len(rows) != 12 || rows[0] != "inventory:app-00" {
			return fmt.Errorf("postgres: %v", rows) // never inventory.part-…
		}
		parts = n
		return nil
	})
	if n, _ := git(bare, "rev-list", "--count", "main"); n != "1" {
		t.Errorf("the split export made %s commits, want 1", n)
	}
	eventually(t, 20*time.Second, "status and metrics say how many parts", func() error {
		inv := get(t, "KollectInventory", "sharded", "inventory")
		exports, _, _ := unstructured.NestedSlice(inv.Object, "status", "sinkExports")
		got := map[string]any{}
		for _, e := range exports {
			m := e.(map[string]any)
			got[fmt.Sprint(m["name"])] = m["lastExportParts"]
		}
		if fmt.Sprint(got["snapshot/git"]) != fmt.Sprint(parts) || got["database/warehouse"] != nil {
			return fmt.Errorf("lastExportParts %v, want %d for git and none for the database", got, parts)
		}
		series := fmt.Sprintf(`kollect_export_parts{binding="snapshot/git",inventory="sharded/inventory"} %d`, parts)
		if !strings.Contains(scrape(t), series) {
			return fmt.Errorf("/metrics lacks %s", series)
		}
		return nil
	})

	// One row over the ceiling holds only itself: both bindings set it
	// aside, name it, and go on exporting the others.
	apply(t, deploymentYAML("sharded-apps", "huge", "shop", "registry.example/"+strings.Repeat("x", 1500)+":1"))
	apply(t, deploymentYAML("sharded-apps", "small", "shop", "registry.example/small:1"))
	eventually(t, 30*time.Second, "a row over the ceiling is set aside by both bindings, named, and the rest exported", func() error {
		inv := get(t, "KollectInventory", "sharded", "inventory")
		exports, _, _ := unstructured.NestedSlice(inv.Object, "status", "sinkExports")
		aside := 0
		for _, e := range exports {
			m := e.(map[string]any)
			keys, _, _ := unstructured.NestedStringSlice(m, "rejectedKeys")
			if fmt.Sprint(m["rejectedCount"]) == "1" && len(keys) == 1 && strings.HasPrefix(keys[0], "sharded/shop-deployments/") &&
				strings.Contains(fmt.Sprint(m["rejectedReason"]), "single item export envelope exceeds maxExportBytes (1500)") {
				aside++
			}
		}
		if aside != 2 {
			return fmt.Errorf("%d bindings report the row set aside: %v", aside, exports)
		}
		if rows, err := pgNames(); err != nil || len(rows) != 13 || !slices.Contains(rows, "inventory:small") || slices.Contains(rows, "inventory:huge") {
			return fmt.Errorf("postgres: %v %v", rows, err)
		}
		names, _, err := gitNames()
		if err != nil || !slices.Contains(names, "small") || slices.Contains(names, "huge") {
			return fmt.Errorf("git: %v %v", names, err)
		}
		return nil
	})
	for _, name := range []string{"huge", "small"} {
		if err := env.Client.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "sharded-apps", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "without them, both bindings hold the twelve rows and nothing set aside", func() error {
		inv := get(t, "KollectInventory", "sharded", "inventory")
		if s, r, m := condition(inv, "Ready"); s != "True" || r != "Exported" {
			return fmt.Errorf("Ready=%s/%s %s", s, r, m)
		}
		exports, _, _ := unstructured.NestedSlice(inv.Object, "status", "sinkExports")
		for _, e := range exports {
			if m := e.(map[string]any); m["rejectedCount"] != nil {
				return fmt.Errorf("%v still reports rejected rows", m["name"])
			}
		}
		if rows, err := pgNames(); err != nil || len(rows) != 12 {
			return fmt.Errorf("postgres: %v %v", rows, err)
		}
		return nil
	})

	// A higher ceiling takes effect at once: one document again, the part
	// documents removed in the same commit.
	inv := get(t, "KollectInventory", "sharded", "inventory")
	if err := unstructured.SetNestedField(inv.Object, int64(1<<20), "spec", "maxExportBytes"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Update(ctx, inv); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a raised ceiling gives one document", files(bare)("inventory/sharded/inventory.json"))
}
