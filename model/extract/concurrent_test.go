package extract_test

import (
	"fmt"
	"sync"
	"testing"

	"kollect.dev/kollect/model/extract"
	"kollect.dev/kollect/model/rows"
)

// TestAnExtractorIsSafeForConcurrentUse evaluates one compiled extractor
// from several goroutines at once, with every kind of path that keeps
// state while it evaluates (CEL activations, client-go templates, a range
// template): each object gets its own values. Run with -race (make test).
func TestAnExtractorIsSafeForConcurrentUse(t *testing.T) {
	ex, err := extract.Compile([]extract.Attribute{
		{Name: "simple", Path: "$.spec.image"},
		{Name: "cel", Path: "cel:object.spec.image + '@' + string(object.spec.replicas)"},
		{Name: "filter", Path: "{.spec.ports[?(@.name=='http')].port}"},
		{Name: "names", Path: "{range .spec.ports[*]}{.name}{end}"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	object := func(i int) map[string]any {
		return map[string]any{"spec": map[string]any{"image": fmt.Sprintf("img:%d", i), "replicas": int64(i),
			"ports": []any{map[string]any{"name": "http", "port": int64(8000 + i)}, map[string]any{"name": fmt.Sprintf("p%d", i), "port": int64(1)}}}}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 300 {
				i := w*1000 + n
				got, err := ex.Extract(object(i))
				if err != nil {
					errs <- err
					return
				}
				want := map[string]any{"simple": fmt.Sprintf("img:%d", i), "cel": fmt.Sprintf("img:%d@%d", i, i),
					"filter": int64(8000 + i), "names": "http"}
				if fmt.Sprint(got) != fmt.Sprint(rows.AttributesOf(want)) {
					errs <- fmt.Errorf("object %d: got %v, want %v", i, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
