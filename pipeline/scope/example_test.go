package scope_test

import (
	"fmt"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/scope"
)

// A team's KollectScope caps what its targets read: a target meaning to
// read another team's namespace is refused with the reason its status
// shows. Another scope in the namespace can only narrow it.
func ExampleCeiling_CheckNamespaces() {
	c := scope.Of(
		scope.Rule{Kind: "KollectScope", Name: "0"}, // a tenant's own, with no caps
		scope.Rule{Kind: "KollectScope", Name: "team-a-scope",
			ScopeCeilingSpec: kollectv1alpha1.ScopeCeilingSpec{AllowedNamespaces: []string{"team-a"}}})
	fmt.Println(c.CheckNamespaces([]string{"team-a"}) == nil)
	v := c.CheckNamespaces([]string{"team-a", "team-b"})
	fmt.Println(v.Reason)
	fmt.Println(v.Message)
	// Output:
	// true
	// ScopeNamespaceDenied
	// workload namespace "team-b" is not in KollectScope "team-a-scope" allowedNamespaces
}
