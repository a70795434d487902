package backends

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// countingReader serves one Secret and a ConfigMap, counting every read;
// a Secret named "gone" is not found.
type countingReader struct {
	client.Reader
	reads   int
	version string
}

func (c *countingReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.reads++
	if key.Name == "gone" {
		return errors.New("not found")
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		*o = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: c.version},
			Data: map[string][]byte{"password": []byte("v" + c.version)}}
	case *corev1.ConfigMap:
		o.Name = key.Name
	}
	return nil
}

// A Secret read for a backend is reused for secretTTL, then read again
// (a rotation arrives); a failed read and any other kind are never kept,
// and the copy handed out is the caller's to change.
func TestSecretsAreReusedForAFewSeconds(t *testing.T) {
	now := time.Unix(1000, 0)
	memo := newSecretMemo(func() time.Time { return now })
	under := &countingReader{version: "1"}
	r := memo.reader(under)
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "platform", Name: "pg"}
	read := func() *corev1.Secret {
		t.Helper()
		var s corev1.Secret
		if err := r.Get(ctx, key, &s); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	steps := []struct {
		name    string
		advance time.Duration
		rotate  string
		reads   int
		version string
	}{
		{"first read", 0, "", 1, "1"},
		{"again at once: reused", time.Second, "", 1, "1"},
		{"rotated within the TTL: not yet seen", 2 * time.Second, "2", 1, "1"},
		{"after the TTL: read again", secretTTL, "", 2, "2"},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		if s.rotate != "" {
			under.version = s.rotate
		}
		got := read()
		if under.reads != s.reads || got.ResourceVersion != s.version {
			t.Errorf("%s: %d reads, version %s; want %d, %s", s.name, under.reads, got.ResourceVersion, s.reads, s.version)
		}
		got.Data["password"] = []byte("changed by the caller")
	}
	if string(read().Data["password"]) != "v2" {
		t.Error("a caller's change reached the memo")
	}
	for range 2 {
		var s corev1.Secret
		if err := r.Get(ctx, client.ObjectKey{Namespace: "platform", Name: "gone"}, &s); err == nil {
			t.Fatal("a missing Secret was read")
		}
		var cm corev1.ConfigMap
		if err := r.Get(ctx, key, &cm); err != nil {
			t.Fatal(err)
		}
	}
	if under.reads != 2+4 {
		t.Errorf("%d reads, want 6: failed reads and other kinds go through every time", under.reads)
	}
}

// cacheLagReader is an API server whose watch cache has not seen the
// Secret "new" yet: a read at resourceVersion 0 does not find it, a
// quorum read does. It records the resourceVersion of every read.
type cacheLagReader struct {
	client.Reader
	versions []string
}

func (c *cacheLagReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	var o client.GetOptions
	o.ApplyOptions(opts)
	rv := ""
	if o.Raw != nil {
		rv = o.Raw.ResourceVersion
	}
	c.versions = append(c.versions, rv)
	if key.Name == "new" && rv == "0" {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	obj.(*corev1.Secret).Name = key.Name
	return nil
}

// A Secret is read from the API server's watch cache, and from etcd only
// when the cache does not hold it yet.
func TestSecretsAreReadFromTheWatchCacheFirst(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions []string
	}{
		{"cached", []string{"0"}},
		{"new", []string{"0", ""}},
	} {
		under := &cacheLagReader{}
		var s corev1.Secret
		if err := newSecretMemo(time.Now).reader(under).Get(context.Background(), client.ObjectKey{Namespace: "a", Name: tc.name}, &s); err != nil || s.Name != tc.name {
			t.Fatalf("%s: %v (%q)", tc.name, err, s.Name)
		}
		if !slices.Equal(under.versions, tc.versions) {
			t.Errorf("%s: reads at resourceVersion %q, want %q", tc.name, under.versions, tc.versions)
		}
	}
}
