//go:build integration

package controllers_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// Upstream's series exist beside ours, scraped from the
// real manager: rows per profile and kind (following the cluster), probes
// by sink type and result. kollect_export_debounced_total is tested with
// the sink actor (actors/sink).
func TestUpstreamSeriesAreExported(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "upstream.git")
	bareRepo(t, bare)
	apply(t, namespaceYAML("upstream", "")+`---
apiVersion: v1
kind: ConfigMap
metadata: {name: one, namespace: upstream, labels: {app: counted}}
data: {v: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: two, namespace: upstream, labels: {app: counted}}
data: {v: "1"}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectProfile
metadata: {name: counted-configmaps, namespace: upstream}
spec:
  targetGVK: {version: v1, kind: ConfigMap}
  attributes: [{name: v, path: '$.data.v'}]
---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: counted, namespace: upstream}
spec:
  profileRef: counted-configmaps
  labelSelector: {matchLabels: {app: counted}}
---
`+namespaceYAML("upstream-typo", "")+`---
apiVersion: kollect.dev/v1alpha1
kind: KollectTarget
metadata: {name: typo, namespace: upstream-typo}
spec:
  profileRef: no-such-profile
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: unreachable, namespace: upstream}
spec:
  type: s3
  endpoint: s3://no-such-bucket
  secretRef: {name: missing-keys}
---
apiVersion: kollect.dev/v1alpha1
kind: KollectSnapshotSink
metadata: {name: git, namespace: upstream}
spec:
  type: git
  endpoint: file://`+bare+`
---
apiVersion: kollect.dev/v1alpha1
kind: KollectInventory
metadata: {name: slow, namespace: upstream}
spec:
  snapshotSinkRefs: [{name: git, exportMinInterval: 1h}]
`)
	value := func(m, series string) (float64, bool) {
		re := regexp.MustCompile(regexp.QuoteMeta(series) + ` ([0-9.e+]+)`)
		if g := re.FindStringSubmatch(m); g != nil {
			v, err := strconv.ParseFloat(g[1], 64)
			return v, err == nil
		}
		return 0, false
	}
	eventually(t, 30*time.Second, "rows per profile and kind, and a failed probe, are counted", func() error {
		m := scrape(t)
		if v, ok := value(m, `kollect_collected_objects{gvk="v1/ConfigMap",profile="counted-configmaps"}`); !ok || v != 2 {
			return fmt.Errorf("kollect_collected_objects %v %v", v, ok)
		}
		if v, ok := value(m, `kollect_sink_connection_test_total{result="failure",type="s3"}`); !ok || v < 1 {
			return fmt.Errorf("kollect_sink_connection_test_total (s3 failure) %v %v", v, ok)
		}
		// References resolved, found and not.
		for _, series := range []string{`kollect_static_ref_resolution_total{kind="KollectTarget",ref_type="profile",result="ok"}`,
			`kollect_static_ref_resolution_total{kind="KollectTarget",ref_type="profile",result="not_found"}`,
			`kollect_static_ref_resolution_total{kind="KollectInventory",ref_type="snapshot",result="ok"}`} {
			if v, ok := value(m, series); !ok || v < 1 {
				return fmt.Errorf("%s %v %v", series, v, ok)
			}
		}
		// Upstream's caches Kollect has no counterpart of, and its size
		// warnings: present, so upstream's queries resolve.
		for _, series := range []string{`kollect_access_cache_total{result="hit"}`, `kollect_access_cache_total{result="miss"}`,
			`kollect_namespace_fingerprint_cache_total{controller="kollectinventory",result="hit"}`,
			"kollect_export_spill_warn_total", "kollect_export_shard_warn_total"} {
			if _, ok := value(m, series); !ok {
				return fmt.Errorf("%s is not exported", series)
			}
		}
		return nil
	})
	eventually(t, 30*time.Second, "the first export lands", files(bare)("inventory/upstream/slow.yaml"))
	apply(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: three, namespace: upstream, labels: {app: counted}}
data: {v: "1"}
`)
	eventually(t, 30*time.Second, "a new row is counted under its profile and kind", func() error {
		if v, _ := value(scrape(t), `kollect_collected_objects{gvk="v1/ConfigMap",profile="counted-configmaps"}`); v != 3 {
			return fmt.Errorf("kollect_collected_objects %v, want 3", v)
		}
		return nil
	})
}
