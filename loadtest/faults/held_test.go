package faults

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// keepers are the sinks that can keep one target's rows apart from the
// others': every sink of the rig but Azure, which writes the inventory as
// one document. untargeted are those whose files do not name their target
// (Git and GitLab with content: attributes): a partial export keeps every
// file they own, so a row deleted meanwhile goes with the next complete one.
var (
	keepers    = []string{"git", "gitlab", "s3", "gcs", "postgres", "mongodb", "bigquery", "nats", "kafka"}
	untargeted = map[string]bool{"git": true, "gitlab": true}
)

// TestATargetBrokenAcrossARestartHoldsOnlyItself: a second target, held,
// is broken (its profile reference has a typo) when the manager restarts,
// so nothing since the start has shown what the sinks hold of it. The
// other target's changes made while the manager was down still reach every
// sink that can keep the held target's rows apart, those rows stay exactly
// as they were (a change made to one of its objects meanwhile is not
// exported: nobody observed it), the document sink waits and says so, and
// once the typo is fixed every sink holds the cluster.
func TestATargetBrokenAcrossARestartHoldsOnlyItself(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, "faults-held")
	r.apply()
	n := min(objects(), 1000)
	const extras = 50
	held := kollect("KollectTarget", r.ns, "held")
	held.Object["spec"] = map[string]any{"profileRef": "configmaps",
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": r.ns}},
		"labelSelector":     map[string]any{"matchLabels": map[string]any{"app": "faults-held"}}}
	if err := env.Client.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the rig's teardown, while the operator runs
		_ = env.Client.Delete(context.Background(), kollect("KollectTarget", r.ns, "held"))
		time.Sleep(2 * time.Second)
	})
	putHeld := func(i int, version string) {
		t.Helper()
		if err := r.putLabelled(ctx, fmt.Sprintf("held-%05d", i), "faults-held", version); err != nil {
			t.Fatal(err)
		}
	}
	before := state{}
	for i := range n {
		before[name(i)] = "v1"
	}
	for i := range extras {
		putHeld(i, "v1")
		before[fmt.Sprintf("held-%05d", i)] = "v1"
	}
	if err := r.write(ctx, 0, n, "v1"); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.waitConverged(ctx, before, 5*time.Minute)

	// The typo, then a restart; meanwhile the other target's objects
	// change (a tenth updated, a tenth deleted), and one of the held.
	setProfile := func(profile string) {
		t.Helper()
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(held), held); err != nil {
			t.Fatal(err)
		}
		held.Object["spec"].(map[string]any)["profileRef"] = profile
		if err := env.Client.Update(ctx, held); err != nil {
			t.Fatal(err)
		}
	}
	setProfile("configmap") // no such profile
	time.Sleep(2 * time.Second)
	if _, err := r.op.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	tenth := max(n/10, 1)
	if err := r.write(ctx, 0, tenth, "v2"); err != nil {
		t.Fatal(err)
	}
	for i := tenth; i < 2*tenth; i++ {
		if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	putHeld(0, "v2")
	final := maps.Clone(before)
	for i := range tenth {
		final[name(i)] = "v2"
	}
	for i := tenth; i < 2*tenth; i++ {
		delete(final, name(i))
	}
	final["held-00000"] = "v2"

	// What each sink must hold while the held target is broken.
	holding := maps.Clone(final)
	holding["held-00000"] = "v1"
	lingering := maps.Clone(holding)
	for i := tenth; i < 2*tenth; i++ {
		lingering[name(i)] = "v1"
	}
	restarted := time.Now()
	r.start()
	eventually(t, 2*time.Minute, "every sink that can keep the held target's rows holds the other's changes", func() error {
		h, err := r.read(ctx)
		if err != nil {
			return err
		}
		for _, s := range keepers {
			want := holding
			if untargeted[s] {
				want = lingering
			}
			if d := want.diff(h.states()[s]); d != "" {
				return fmt.Errorf("%s: %s", s, d)
			}
		}
		if d := before.diff(h.azure); d != "" {
			return fmt.Errorf("azure, which must wait: %s", d)
		}
		return nil
	})
	t.Logf("the other target's changes reached the nine keeping sinks %s after the restart", time.Since(restarted).Round(time.Millisecond))
	st, err := r.inventoryStatus()
	if err != nil {
		t.Fatal(err)
	}
	if msg := fmt.Sprint(st["conditions"]); !strings.Contains(msg, "holding the rows of 1 target(s)") || !strings.Contains(msg, "KollectTarget:"+r.ns+"/held") || !strings.Contains(msg, "blob") {
		t.Fatalf("status does not say which target is held and which sink waits: %s", msg)
	}
	time.Sleep(2 * time.Second) // more batch windows: the held rows stay, Azure still waits
	h, err := r.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := before.diff(h.azure); d != "" {
		t.Fatalf("azure exported while it could not keep the held rows: %s", d)
	}
	for _, s := range keepers {
		if v := h.states()[s]["held-00000"]; v != "v1" {
			t.Fatalf("%s holds the held target's unobserved change (%s)", s, v)
		}
	}

	fixed := time.Now()
	setProfile("configmaps")
	r.waitConverged(ctx, final, 2*time.Minute)
	t.Logf("every sink exact %s after the typo was fixed", time.Since(fixed).Round(time.Millisecond))
}
