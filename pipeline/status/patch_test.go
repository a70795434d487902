//go:build integration

package status_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/controllers/controllertest"
	"kollect.dev/kollect/pipeline/status"
)

// A status that says what the object already says sends no request; one
// that differs is patched and stored.
func TestPatchSendsOnlyAChange(t *testing.T) {
	ctx := context.Background()
	inv := &kollectv1alpha1.KollectInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "inv"}}
	inv.Status.ItemCount = 3
	sent := 0
	c := fake.NewClientBuilder().WithScheme(controllertest.Scheme()).WithObjects(inv).WithStatusSubresource(inv).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			sent++
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	for _, tc := range []struct {
		name  string
		count int
		sent  bool
	}{
		{"the same count", 3, false},
		{"a new count", 4, true},
		{"the new count again", 4, false},
	} {
		var got kollectv1alpha1.KollectInventory
		if err := c.Get(ctx, client.ObjectKeyFromObject(inv), &got); err != nil {
			t.Fatal(err)
		}
		base := got.DeepCopy()
		got.Status.ItemCount = tc.count
		before := sent
		if err := status.Patch(ctx, c, &got, base); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (sent > before) != tc.sent {
			t.Errorf("%s: Patch sent %d request(s), want sent=%v", tc.name, sent-before, tc.sent)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(inv), &got); err != nil || got.Status.ItemCount != tc.count {
			t.Errorf("%s: stored itemCount %d (%v), want %d", tc.name, got.Status.ItemCount, err, tc.count)
		}
	}
}
