package objectstore_test

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"kollect.dev/kollect/internal/servers/s3test"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/objectstore"
)

// faultBucket is an S3 bucket reached through a proxy that fails what a
// test tells it to.
type faultBucket struct {
	srv    *s3test.Server
	proxy  *sinktest.FaultProxy
	bucket string
}

func newFaultBucket(t *testing.T, bucket string) *faultBucket {
	srv := s3test.Start(t)
	if err := srv.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	p, err := sinktest.NewFaultProxy(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return &faultBucket{srv: srv, proxy: p, bucket: bucket}
}

// store opens a new store through the proxy, as a new operator process
// would: nothing is carried over but what the bucket holds.
func (f *faultBucket) store(t *testing.T, layout string) *objectstore.Store {
	t.Helper()
	open := open(t, &s3test.Server{URL: f.proxy.URL}, f.bucket, "")
	cfg := open()
	cfg.Layout = layout
	st, err := objectstore.New(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// rowObject reports whether a request writes or deletes an object of rows
// (not the manifest or the journal under .kollect/).
func rowObject(r *http.Request, method string) bool {
	return r.Method == method && !strings.Contains(r.URL.Path, "/.kollect/")
}

// held decodes every row object in the bucket, as a reader of the whole
// prefix (DuckDB, Athena) sees them, whatever the manifest says.
func (f *faultBucket) held(t *testing.T) map[string]int {
	t.Helper()
	get := s3Read(f.srv, f.bucket)
	out := map[string]int{}
	pages := s3.NewListObjectsV2Paginator(f.srv.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(f.bucket)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if strings.HasPrefix(key, ".kollect/") {
				continue
			}
			body, enc, _ := get(t, key)
			for _, r := range decode(t, key, enc, body) {
				out[sinktest.Canonical(t, r)]++
			}
		}
	}
	return out
}

func (f *faultBucket) expect(t *testing.T, rs []*rows.Row, when string) {
	t.Helper()
	want := map[string]int{}
	for _, r := range rs {
		want[sinktest.Canonical(t, string(r.JSON()))]++
	}
	if got := f.held(t); !maps.Equal(got, want) {
		t.Fatalf("%s: the bucket holds %d distinct rows, want exactly the %d of the snapshot", when, len(got), len(rs))
	}
}

// A failed export followed by a return to the previous content: every
// key the failed export changed is checked by the next, even where the
// manifest says it holds the content already.
func TestAFailedExportNeverLeavesContentTheManifestDoesNotDescribe(t *testing.T) {
	id := rows.Identity{Namespace: "ops", Name: "inv", Generation: 1}
	a, b := sinktest.Rows(20, "a"), sinktest.Rows(20, "b")
	cases := []struct {
		name, layout string
		fail         func(*http.Request) bool
		failed       []*rows.Row // what the failing export tries to write
		retry        []*rows.Row // what the cluster holds when it retries
	}{
		{name: "manifest write fails after objects were overwritten", layout: "document",
			fail: func(r *http.Request) bool {
				return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/.kollect/default/ops/inv.json")
			}, failed: b, retry: a},
		{name: "per-row overwrite then manifest failure", layout: "perResource",
			fail: func(r *http.Request) bool {
				return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/.kollect/default/ops/inv.json")
			}, failed: b, retry: a},
		{name: "an empty export fails halfway through its deletes", layout: "perResource",
			fail: failAfter(10, func(r *http.Request) bool { return rowObject(r, http.MethodDelete) }), failed: nil, retry: a},
		{name: "deletes of rows that went fail after the manifest", layout: "perResource",
			fail: func(r *http.Request) bool { return rowObject(r, http.MethodDelete) }, failed: a[:10], retry: a[:10]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFaultBucket(t, "b-"+strings.ReplaceAll(c.layout, "R", "r"))
			ctx := context.Background()
			if _, err := f.store(t, c.layout).Export(ctx, sinktest.Snap(id, a)); err != nil {
				t.Fatal(err)
			}
			f.proxy.FailWhen(c.fail)
			if _, err := f.store(t, c.layout).Export(ctx, sinktest.Snap(id, c.failed)); err == nil {
				t.Fatal("the export succeeded through the fault")
			}
			if len(f.proxy.Failed()) == 0 {
				t.Fatal("the fault never happened")
			}
			f.proxy.FailWhen(nil)
			if _, err := f.store(t, c.layout).Export(ctx, sinktest.Snap(id, c.retry)); err != nil {
				t.Fatal(err)
			}
			f.expect(t, c.retry, "after the retry")
		})
	}
}

// failAfter passes the first n requests match picks and fails the rest.
func failAfter(n int64, match func(*http.Request) bool) func(*http.Request) bool {
	var seen atomic.Int64
	return func(r *http.Request) bool { return match(r) && seen.Add(1) > n }
}

// A first export of many per-row objects that fails halfway resumes: the
// retry writes only the objects the failure left unwritten.
func TestAFailedExportResumesWhereItStopped(t *testing.T) {
	f := newFaultBucket(t, "resume")
	id := rows.Identity{Namespace: "ops", Name: "inv", Generation: 1}
	rs := sinktest.Rows(200, "1")
	ctx := context.Background()
	f.proxy.FailWhen(failAfter(120, func(r *http.Request) bool { return rowObject(r, http.MethodPut) }))
	if _, err := f.store(t, "perResource").Export(ctx, sinktest.Snap(id, rs)); err == nil {
		t.Fatal("the export succeeded through the fault")
	}
	var puts atomic.Int64
	f.proxy.FailWhen(func(r *http.Request) bool {
		if rowObject(r, http.MethodPut) {
			puts.Add(1)
		}
		return false
	})
	if _, err := f.store(t, "perResource").Export(ctx, sinktest.Snap(id, rs)); err != nil {
		t.Fatal(err)
	}
	f.expect(t, rs, "after the retry")
	if n := puts.Load(); n != 80 {
		t.Errorf("the retry wrote %d row objects; the failed export had written 120 of 200, so 80 were left", n)
	}
}

// A deletion of many objects cut partway resumes: the journal keeps only
// the deletes left after each completed chunk.
func TestAnInterruptedDeletionResumes(t *testing.T) {
	f := newFaultBucket(t, "deletion")
	id := rows.Identity{Namespace: "ops", Name: "inv", Generation: 1}
	ctx := context.Background()
	if _, err := f.store(t, "perResource").Export(ctx, sinktest.Snap(id, sinktest.Rows(2500, "1"))); err != nil {
		t.Fatal(err)
	}
	f.proxy.FailWhen(failAfter(1500, func(r *http.Request) bool { return rowObject(r, http.MethodDelete) }))
	if _, err := f.store(t, "perResource").Export(ctx, sinktest.Snap(id, nil)); err == nil {
		t.Fatal("the deletion succeeded through the fault")
	}
	var deletes atomic.Int64
	f.proxy.FailWhen(func(r *http.Request) bool {
		if rowObject(r, http.MethodDelete) {
			deletes.Add(1)
		}
		return false
	})
	if _, err := f.store(t, "perResource").Export(ctx, sinktest.Snap(id, nil)); err != nil {
		t.Fatal(err)
	}
	f.expect(t, nil, "after the retry")
	if n := deletes.Load(); n > 1500 {
		t.Errorf("the retry deleted %d objects; the first completed chunk of 1,000 should not be deleted again", n)
	}
}
