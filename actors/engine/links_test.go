package engine

import (
	"slices"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/model/rows"
)

// TestATargetReachesOnlyTheInventoriesThatReadIt: a team's target starting
// or stopping reconfigures that team's inventories (and a cluster
// inventory that names it), not every team's; a cluster target reaches
// every namespaced inventory.
func TestATargetReachesOnlyTheInventoriesThatReadIt(t *testing.T) {
	l := newLinks()
	nsTarget := func(ns, name string) messages.TargetRef {
		return messages.TargetRef{Kind: "KollectTarget", Namespace: ns, Name: name}
	}
	clusterTarget := func(name string) messages.TargetRef { return messages.TargetRef{Kind: ClusterTargetKind, Name: name} }
	inv := func(key, ns string, cluster bool, targets ...messages.TargetRef) {
		l.addInventory(key, &inventoryEntry{spec: InventorySpec{Key: key, ID: rows.Identity{Namespace: ns, Name: key}, Cluster: cluster, Targets: targets}})
	}
	inv("a1", "team-a", false)
	inv("a2", "team-a", false)
	inv("b1", "team-b", false)
	inv("fleet", "", true, clusterTarget("nodes"))
	inv("other", "", true, clusterTarget("crds"))
	for _, ref := range []messages.TargetRef{nsTarget("team-a", "apps"), nsTarget("team-b", "apps"), clusterTarget("nodes")} {
		l.addTarget(ref, &targetEntry{pid: actor.NewPID("local", ref.String())})
	}

	for _, tc := range []struct {
		name string
		ref  messages.TargetRef
		want []string
	}{
		{"a team's target", nsTarget("team-a", "apps"), []string{"a1", "a2"}},
		{"another team's target", nsTarget("team-b", "apps"), []string{"b1"}},
		{"a team with no inventory", nsTarget("team-c", "apps"), nil},
		{"a cluster target", clusterTarget("nodes"), []string{"a1", "a2", "b1", "fleet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, ent := range l.readers(tc.ref) {
				got = append(got, ent.spec.Key)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("readers(%s) = %v, want %v", tc.ref, got, tc.want)
			}
		})
	}

	refs := func(key string) []string {
		var out []string
		for _, tg := range l.config(l.inventories[key], 0, false).Sources {
			out = append(out, tg.Ref.String())
		}
		slices.Sort(out)
		return out
	}
	if got, want := refs("a1"), []string{clusterTarget("nodes").String(), nsTarget("team-a", "apps").String()}; !slices.Equal(got, want) {
		t.Fatalf("team-a's inventory reads %v, want %v", got, want)
	}
	if got, want := refs("fleet"), []string{clusterTarget("nodes").String()}; !slices.Equal(got, want) {
		t.Fatalf("the cluster inventory reads %v, want %v", got, want)
	}

	l.dropTarget(nsTarget("team-a", "apps"))
	l.dropInventory("a2")
	if got, want := refs("a1"), []string{clusterTarget("nodes").String()}; !slices.Equal(got, want) {
		t.Fatalf("after its target stopped, team-a's inventory reads %v, want %v", got, want)
	}
	if got := l.readers(nsTarget("team-a", "apps")); len(got) != 1 || got[0].spec.Key != "a1" {
		t.Fatalf("after a2 was removed, team-a's target reaches %d inventories, want a1 alone", len(got))
	}
	if len(l.nsTargets["team-a"]) != 0 || l.nsTargets["team-a"] != nil {
		t.Fatal("an empty namespace stays in the target index")
	}
}
