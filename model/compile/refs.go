package compile

import (
	"fmt"
	"strings"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// maxBindings is how many sink references an inventory may hold.
const maxBindings = 20

// CheckRefs applies the rules the CRD schema cannot express for refs
// written as strings. namespace is where refs without one point;
// allowNamespace permits refs into other namespaces (cluster inventories).
func CheckRefs(refs kollectv1alpha1.SinkRefs, namespace string, allowNamespace bool) error {
	var problems []string
	total := 0
	for _, fam := range []struct {
		field string
		refs  []kollectv1alpha1.InventorySinkRef
	}{{"snapshotSinkRefs", refs.SnapshotSinkRefs}, {"databaseSinkRefs", refs.DatabaseSinkRefs}, {"eventSinkRefs", refs.EventSinkRefs}} {
		seen := map[string]bool{}
		for i, ref := range fam.refs {
			total++
			switch {
			case ref.Name == "" || strings.Contains(ref.Name, "/"):
				problems = append(problems, fmt.Sprintf("spec.%s[%d]: %q must be the name of a sink in namespace %q, without '/'", fam.field, i, ref.Name, namespace))
			case ref.Namespace != "" && !allowNamespace:
				problems = append(problems, fmt.Sprintf("spec.%s[%d].namespace: a KollectInventory binds sinks in its own namespace; remove the namespace", fam.field, i))
			case seen[ref.Namespace+"/"+ref.Name]:
				problems = append(problems, fmt.Sprintf("spec.%s[%d]: %q is listed twice", fam.field, i, ref.Name))
			}
			seen[ref.Namespace+"/"+ref.Name] = true
		}
	}
	if total > maxBindings {
		problems = append(problems, fmt.Sprintf("spec: %d sink references; an inventory binds at most %d", total, maxBindings))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// ClusterInventoryNamespace is the inventory namespace the rows, paths and
// messages of cluster inventories carry in every sink: a cluster
// inventory is exported as if it were an inventory of namespace "cluster"
// (Postgres inventory_namespace 'cluster', Git inventory/cluster/<name>).
const ClusterInventoryNamespace = "cluster"

// CheckInventoryNamespace refuses a KollectInventory in the namespace
// named like cluster inventories' identity: its rows would be theirs in
// every sink, and each one's full export would delete the other's rows.
func CheckInventoryNamespace(namespace string) error {
	if namespace != ClusterInventoryNamespace {
		return nil
	}
	return fmt.Errorf("namespace %q is the inventory namespace every KollectClusterInventory's rows carry in the sinks: "+
		"a KollectInventory here would share their identity and delete their rows; put it in another namespace", namespace)
}
