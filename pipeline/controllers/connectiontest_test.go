//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestConnectionTestProbesOwnsAndExpires runs KollectConnectionTests:
// one against a reachable Git sink completes with
// ProbeSucceeded, a latency and the sink as its controller owner, and is
// deleted after its TTL; one naming a missing sink completes with
// SinkNotFound.
func TestConnectionTestProbesOwnsAndExpires(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "probe.git")
	bareRepo(t, bare)
	apply(t, namespaceYAML("conntest", "")+`---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: git, namespace: conntest}
spec: {type: git, endpoint: "file://`+bare+`"}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectConnectionTest
metadata: {name: probe, namespace: conntest}
spec:
  sinkRef: {snapshotSinkRef: git}
  ttlSecondsAfterFinished: 3
---
apiVersion: kollect.dev/v1alpha1
kind: KollectConnectionTest
metadata: {name: missing, namespace: conntest}
spec:
  sinkRef: {databaseSinkRef: nowhere}
`)
	eventually(t, 30*time.Second, "the probe completes", func() error {
		ct := get(t, "KollectConnectionTest", "conntest", "probe")
		done, _, _ := unstructured.NestedBool(ct.Object, "status", "completed")
		if s, r, m := condition(ct, "Ready"); !done || s != "True" || r != "ProbeSucceeded" {
			return fmt.Errorf("completed=%v Ready=%s/%s: %s", done, s, r, m)
		}
		if s, r, _ := condition(ct, "ConnectionVerified"); s != "True" || r != "ConnectionOK" {
			return fmt.Errorf("ConnectionVerified=%s/%s", s, r)
		}
		if _, ok, _ := unstructured.NestedInt64(ct.Object, "status", "latencyMs"); !ok {
			// latencyMs is omitted when 0; a local probe may take under 1 ms.
			if at, _, _ := unstructured.NestedString(ct.Object, "status", "completedAt"); at == "" {
				return fmt.Errorf("no completedAt")
			}
		}
		owners := ct.GetOwnerReferences()
		if len(owners) != 1 || owners[0].Kind != "KollectSnapshotSink" || owners[0].Name != "git" || owners[0].Controller == nil || !*owners[0].Controller {
			return fmt.Errorf("owners %+v", owners)
		}
		return nil
	})
	eventually(t, 30*time.Second, "the missing sink is reported", func() error {
		ct := get(t, "KollectConnectionTest", "conntest", "missing")
		done, _, _ := unstructured.NestedBool(ct.Object, "status", "completed")
		if s, r, m := condition(ct, "Ready"); !done || s != "False" || r != "SinkNotFound" {
			return fmt.Errorf("completed=%v Ready=%s/%s: %s", done, s, r, m)
		}
		return nil
	})
	eventually(t, 30*time.Second, "the completed probe is deleted after its TTL", func() error {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("kollect.dev/v1alpha1")
		u.SetKind("KollectConnectionTest")
		err := env.Client.Get(context.Background(), keyOf("conntest", "probe"), u)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (err %v)", err)
	})
	// The other test keeps its default TTL of 300 s.
	get(t, "KollectConnectionTest", "conntest", "missing")
}

func keyOf(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
