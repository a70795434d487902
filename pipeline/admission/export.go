package admission

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/compile"
	"kollect.dev/kollect/pipeline/scope"
)

// DefaultMaxExportBytes is the global export ceiling when the operator
// sets none (1.5 MiB, upstream's).
const DefaultMaxExportBytes = 1572864

// schemaDefaultInterval is what the CRD schema fills in for an omitted
// spec.exportMinInterval: the webhook cannot tell it from a value the user
// wrote, so it is not compared with a scope's floor here (an omitted
// interval is not the user's to fix); the runtime raises it to the floor.
const schemaDefaultInterval = "30s"

// floorProblems compares the intervals written on an object with the
// floor of the KollectScope of namespace.
func floorProblems(ctx context.Context, c client.Reader, namespace string, intervals map[string]string) []string {
	ceiling, err := scope.Namespaced(ctx, c, namespace)
	if err != nil {
		return []string{err.Error()}
	}
	floor := ceiling.Floor()
	if floor == 0 {
		return nil
	}
	var problems []string
	fields := slices.Sorted(maps.Keys(intervals))
	for _, field := range fields {
		v := intervals[field]
		d, err := time.ParseDuration(v)
		if v == "" || err != nil || d >= floor {
			continue
		}
		problems = append(problems, fmt.Sprintf("%s: %s is below the minimum export interval %s of %s", field, v, floor, ceiling))
	}
	return problems
}

func refIntervals(refs kollectv1alpha1.SinkRefs, into map[string]string) {
	for _, fam := range []struct {
		field string
		refs  []kollectv1alpha1.InventorySinkRef
	}{{"snapshotSinkRefs", refs.SnapshotSinkRefs}, {"databaseSinkRefs", refs.DatabaseSinkRefs}, {"eventSinkRefs", refs.EventSinkRefs}} {
		for i, r := range fam.refs {
			into[fmt.Sprintf("spec.%s[%d].exportMinInterval", fam.field, i)] = string(r.ExportMinInterval)
		}
	}
}

func maxBytes(o Options, field string, v *int64) []string {
	limit := o.MaxExportBytes
	if limit <= 0 {
		limit = DefaultMaxExportBytes
	}
	if v != nil && (*v <= 0 || *v > limit) {
		return []string{fmt.Sprintf("%s: %d must be between 1 and the operator's ceiling %d", field, *v, limit)}
	}
	return nil
}

// inventory: sink references and the interval floor of its namespace.
func inventory(ctx context.Context, c client.Reader, o Options, inv *kollectv1alpha1.KollectInventory) (warnings, problems []string) {
	if err := compile.CheckInventoryNamespace(inv.Namespace); err != nil {
		problems = append(problems, err.Error())
	}
	if err := compile.CheckRefs(inv.Spec.SinkRefs, inv.Namespace, false); err != nil && !o.policyOnly {
		problems = append(problems, err.Error())
	}
	problems = append(problems, maxBytes(o, "spec.maxExportBytes", inv.Spec.MaxExportBytes)...)
	intervals := map[string]string{}
	if v := string(inv.Spec.ExportMinInterval); v != schemaDefaultInterval {
		intervals["spec.exportMinInterval"] = v
	}
	refIntervals(inv.Spec.SinkRefs, intervals)
	problems = append(problems, floorProblems(ctx, c, inv.Namespace, intervals)...)
	return warnings, problems
}

// clusterInventory: refused in tenant mode; otherwise references, the
// cluster scope (namespaces and sinks) and the floor of sinkNamespace.
func clusterInventory(ctx context.Context, c client.Reader, o Options, ci *kollectv1alpha1.KollectClusterInventory) (warnings, problems []string) {
	if o.TenantMode {
		return nil, []string{"cluster-scoped inventories are not allowed: the operator runs in tenant mode"}
	}
	sinkNS := ci.Spec.SinkNamespace
	if sinkNS == "" {
		sinkNS = "kollect-system"
	}
	if strings.Contains(sinkNS, "/") {
		problems = append(problems, fmt.Sprintf("spec.sinkNamespace: %q must be a namespace name", sinkNS))
	}
	if err := compile.CheckRefs(ci.Spec.SinkRefs, sinkNS, true); err != nil && !o.policyOnly {
		problems = append(problems, err.Error())
	}
	if s := ci.Spec.NamespaceSelector; s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0) {
		problems = append(problems, "spec.namespaceSelector: required, and must not be empty")
	}
	ceiling, err := scope.Cluster(ctx, c)
	if err != nil {
		return nil, append(problems, err.Error())
	}
	if ref := ci.Spec.ProfileRef; ref != nil && ref.Namespace != "" {
		if v := ceiling.CheckStaticRef("profileRef", ref.Namespace, scope.ReasonNamespaceDenied); v != nil {
			problems = append(problems, v.Message)
		}
	}
	for _, refs := range [][]kollectv1alpha1.InventorySinkRef{ci.Spec.SnapshotSinkRefs, ci.Spec.DatabaseSinkRefs, ci.Spec.EventSinkRefs} {
		for _, ref := range refs {
			ns := ref.Namespace
			if ns == "" {
				ns = sinkNS
			}
			if v := ceiling.CheckStaticRef(fmt.Sprintf("sink %q", ref.Name), ns, scope.ReasonSinkNamespaceDenied); v != nil {
				problems = append(problems, v.Message)
			}
		}
	}
	if v := ceiling.CheckSinks(ci.Spec.SinkRefs); v != nil {
		problems = append(problems, v.Message)
	}
	intervals := map[string]string{}
	if v := string(ci.Spec.ExportMinInterval); v != schemaDefaultInterval {
		intervals["spec.exportMinInterval"] = v
	}
	refIntervals(ci.Spec.SinkRefs, intervals)
	problems = append(problems, floorProblems(ctx, c, sinkNS, intervals)...)
	return warnings, problems
}
