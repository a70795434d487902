package manifests_test

import (
	"bytes"
	"encoding/json"
	"testing"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/manager"
	"kollect.dev/kollect/pipeline/tools/manifests"
)

// FuzzDecodeEveryKind decodes arbitrary YAML documents and converts each
// Kollect object to its typed kind, as the CLI and validate do: nothing
// panics, and a decoded object survives a JSON round trip of its type.
func FuzzDecodeEveryKind(f *testing.F) {
	scheme, err := manager.NewScheme()
	if err != nil {
		f.Fatal(err)
	}
	for _, kind := range []string{"KollectProfile", "KollectTarget", "KollectClusterTarget", "KollectInventory", "KollectClusterInventory",
		"KollectSnapshotSink", "KollectDatabaseSink", "KollectEventSink", "KollectScope", "KollectClusterScope"} {
		f.Add([]byte("apiVersion: kollect.dev/v1alpha1\nkind: " + kind + "\nmetadata: {name: x, namespace: y}\nspec: {profileRef: p, sinkRefs: [a], attributes: [{name: a, path: '$.a'}]}\n"))
	}
	f.Add([]byte("apiVersion: kollect.dev/v1alpha1\nkind: KollectTarget\nspec: [1, 2]\n---\n{}\n---\n- a\n"))
	f.Add([]byte("apiVersion: kollect.dev/v1alpha1\nkind: KollectEventSink\nspec:\n  type: nats\n  nats: {url: 7}\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		objs, err := manifests.Decode(bytes.NewReader(doc))
		if err != nil {
			return
		}
		for _, u := range objs {
			if u.GroupVersionKind().GroupVersion() != kollectv1alpha1.GroupVersion {
				continue
			}
			typed, err := scheme.New(u.GroupVersionKind())
			if err != nil {
				continue // not a kind of ours
			}
			raw, err := json.Marshal(u.Object)
			if err != nil {
				t.Fatalf("a decoded object does not encode: %v", err)
			}
			if json.Unmarshal(raw, typed) != nil {
				continue // the API server would reject it too
			}
			if _, err := json.Marshal(typed); err != nil {
				t.Fatalf("%s decoded but does not encode again: %v", u.GetKind(), err)
			}
		}
	})
}
