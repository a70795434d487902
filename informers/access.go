package informers

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/cache"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Reviews answers Access by asking the API server whether the operator
// may list and watch a resource in a namespace (SelfSubjectAccessReviews,
// which every authenticated identity may create). Answers are kept for a
// TTL in an LRU of 4,096, upstream's sizes: RBAC granted or revoked is
// seen within the TTL.
type Reviews struct {
	reviews authzclient.SelfSubjectAccessReviewInterface
	ttl     time.Duration
	answers *cache.LRUExpireCache
	// Counted, when set, is told of each question: answered from the
	// cache (hit) or asked (kollect_access_cache_total).
	Counted func(hit bool)
}

// NewReviews returns Reviews over the API server's reviews, keeping
// answers for ttl.
func NewReviews(reviews authzclient.SelfSubjectAccessReviewInterface, ttl time.Duration) *Reviews {
	return &Reviews{reviews: reviews, ttl: ttl, answers: cache.NewLRUExpireCache(4096)}
}

var _ Access = (*Reviews)(nil)

// CanList says whether the operator may list and watch gvr in namespace
// ("" for every namespace at once). An error is no answer: it is not
// kept.
func (r *Reviews) CanList(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (bool, error) {
	key := gvr.String() + "\x00" + namespace
	if v, ok := r.answers.Get(key); ok {
		r.count(true)
		return v.(bool), nil
	}
	r.count(false)
	allowed := true
	for _, verb := range []string{"list", "watch"} {
		rev, err := r.reviews.Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("review %s on %s in %q: %w", verb, gvr.Resource, namespace, err)
		}
		if !rev.Status.Allowed {
			allowed = false
			break
		}
	}
	r.answers.Add(key, allowed, r.ttl)
	return allowed, nil
}

func (r *Reviews) count(hit bool) {
	if r.Counted != nil {
		r.Counted(hit)
	}
}
