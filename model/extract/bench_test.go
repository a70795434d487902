package extract_test

import (
	"fmt"
	"strings"
	"testing"

	"kollect.dev/kollect/model/extract"
)

// referencePool is the upstream benchmark workload: 128 deterministic
// Deployment-shaped objects.
func referencePool() []map[string]any {
	pool := make([]map[string]any, 128)
	for i := range pool {
		status := map[string]any{"observedGeneration": int64(1)}
		if i%7 != 0 {
			status = map[string]any{"readyReplicas": int64(i % 9)}
		}
		pool[i] = map[string]any{
			"apiVersion": "apps/v1",
			"kind":       "Deployment",
			"metadata": map[string]any{
				"name":      fmt.Sprintf("demo-%03d-%s", i, strings.Repeat("x", i%17)),
				"namespace": fmt.Sprintf("ns-%d", i%13),
				"labels":    map[string]any{"app": "kollect", "app.kubernetes.io/part-of": fmt.Sprintf("tier-%d", i%5)},
			},
			"spec":   map[string]any{"replicas": int64(i%9 + 1)},
			"status": status,
		}
	}
	return pool
}

func BenchmarkExtract(b *testing.B) {
	e, err := extract.Compile([]extract.Attribute{
		{Name: "name", Path: "{.metadata.name}"},
		{Name: "replicas", Path: "{.spec.replicas}"},
		{Name: "ready", Path: "cel:has(object.status.readyReplicas) ? object.status.readyReplicas : 0"},
	}, extract.NewScrubber())
	if err != nil {
		b.Fatal(err)
	}
	pool := referencePool()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Extract(pool[i%len(pool)]); err != nil {
			b.Fatal(err)
		}
	}
}
