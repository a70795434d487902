package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/internal/testenv"
)

// TestASecondClusterOnTheSameSinksIsRefused runs two clusters (two API
// servers, two operator processes, each with its default writer id: its
// kube-system namespace's UID) with the same namespace, inventory and
// sinks and no spec.cluster. The second is refused on every sink, says so
// in its status, and writes nothing: no commit, no row, no message; the
// first keeps exporting.
func TestASecondClusterOnTheSameSinksIsRefused(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "faults-writers")
	r.apply()
	n := min(objects(), 1000)
	want, before := r.seed(ctx, n)

	other, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Stop() })
	kc := filepath.Join(r.dir, "kubeconfig-b")
	if err := other.WriteKubeconfig(kc, "b"); err != nil {
		t.Fatal(err)
	}
	r.applyTo(other.Client)
	b := &rig{t: t, ns: r.ns, client: other.Client}
	if err := b.write(ctx, 0, n/2, "b"); err != nil { // the same names, other objects
		t.Fatal(err)
	}
	opB, err := testenv.StartProcess(ctx, testenv.ProcessOptions{Binary: binary, Kubeconfig: kc, Log: filepath.Join(r.dir, "operator-b.log"),
		Env: []string{"KOLLECT_GIT_MIRROR_DIR=" + filepath.Join(r.dir, "mirrors-b")}, Args: r.args})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("second operator's log (end):\n%s", opB.Tail(6000))
		}
		_, _ = opB.Stop(10 * time.Second)
	}()
	started := time.Now()
	eventually(t, 2*time.Minute, "the second cluster's inventory says every sink is another operator's", func() error {
		return refusedEverywhere(ctx, other.Client, r.ns)
	})
	t.Logf("the second cluster reported the refusal on all %d sinks in %s", bindings, time.Since(started).Round(time.Millisecond))
	time.Sleep(3 * time.Second) // anything it would write lands by now

	after, err := r.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := after.converged(want); err != nil {
		t.Fatalf("the sinks changed under the second cluster: %v", err)
	}
	if len(after.commits) != len(before.commits) || len(after.nats) != len(before.nats) || len(after.kafka) != len(before.kafka) {
		t.Fatalf("the second cluster wrote: %d commit(s), %d NATS and %d Kafka message(s)",
			len(after.commits)-len(before.commits), len(after.nats)-len(before.nats), len(after.kafka)-len(before.kafka))
	}
	if ops, err := r.audited(ctx); err != nil || len(ops) != 0 {
		t.Fatalf("Postgres rows were updated or deleted: %v %v", ops, err)
	}
	if w := rewrote(before, after); len(w) != 0 {
		t.Fatalf("the second cluster wrote to %v", w)
	}

	// The first cluster keeps exporting beside the refused one.
	if err := r.write(ctx, 0, 10, "v2"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		want[name(i)] = "v2"
	}
	r.waitConverged(ctx, want, 2*time.Minute)
}

// refusedEverywhere checks that the inventory's every binding failed
// with the foreign-writer refusal, and that the inventory is Degraded.
func refusedEverywhere(ctx context.Context, c client.Client, ns string) error {
	u := kollect("KollectInventory", ns, "inventory")
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
		return err
	}
	exports, _, _ := unstructured.NestedSlice(u.Object, "status", "sinkExports")
	if len(exports) != bindings {
		return fmt.Errorf("%d sinkExports, want %d", len(exports), bindings)
	}
	for _, e := range exports {
		m, _ := e.(map[string]any)
		if m["lastExportTime"] != nil {
			return fmt.Errorf("%v acknowledged an export", m["name"])
		}
		conds, _ := m["conditions"].([]any)
		refused := false
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			msg, _ := cm["message"].(string)
			refused = refused || (cm["type"] == "Synced" && cm["status"] == "False" && strings.Contains(msg, "written by another operator"))
		}
		if !refused {
			return fmt.Errorf("%v: no refusal in %v", m["name"], conds)
		}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if cm, _ := c.(map[string]any); cm["type"] == "Degraded" && cm["status"] == "True" {
			return nil
		}
	}
	return fmt.Errorf("the inventory is not Degraded: %v", conds)
}
