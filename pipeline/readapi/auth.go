package readapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Access is what a route reads: a verb on a kollect.dev resource, in a
// namespace ("" for every namespace) and, for get, by name.
type Access struct {
	Verb, Resource, Namespace, Name string
}

// Authorizer decides whether a request may read what a route reads.
type Authorizer interface {
	// Allow returns nil, or an error that says why not (errUnauthenticated
	// or errForbidden wrapped).
	Allow(ctx context.Context, r *http.Request, a Access) error
}

var (
	errUnauthenticated = errors.New("unauthenticated")
	errForbidden       = errors.New("forbidden")
)

// Open lets every request through: --inventory-auth-mode=disabled, for
// development only.
type Open struct{}

func (Open) Allow(context.Context, *http.Request, Access) error { return nil }

// Kubernetes authenticates a request's bearer token with a TokenReview and
// asks a SubjectAccessReview whether its user may do what a route reads,
// as the API server would. Both answers are cached for TTL, keyed by a
// hash of the token (a token is never kept).
type Kubernetes struct {
	Tokens  authnclient.TokenReviewInterface
	Reviews authzclient.SubjectAccessReviewInterface
	TTL     time.Duration

	users     *cache.LRUExpireCache // token hash → *authenticationv1.UserInfo or error
	decisions *cache.LRUExpireCache // user and access → error (nil: allowed)
}

// NewKubernetes returns the Kubernetes authorizer over the two clients.
func NewKubernetes(tokens authnclient.TokenReviewInterface, reviews authzclient.SubjectAccessReviewInterface, ttl time.Duration) *Kubernetes {
	return &Kubernetes{Tokens: tokens, Reviews: reviews, TTL: ttl, users: cache.NewLRUExpireCache(4096), decisions: cache.NewLRUExpireCache(16384)}
}

func (k *Kubernetes) Allow(ctx context.Context, r *http.Request, a Access) error {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return fmt.Errorf("%w: send a bearer token (Authorization: Bearer <token>)", errUnauthenticated)
	}
	user, err := k.user(ctx, strings.TrimSpace(token))
	if err != nil {
		return err
	}
	return k.decide(ctx, user, a)
}

func (k *Kubernetes) user(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	sum := sha256.Sum256([]byte(token))
	if v, ok := k.users.Get(sum); ok {
		if u, ok := v.(*authenticationv1.UserInfo); ok {
			return u, nil
		}
		return nil, v.(error)
	}
	tr, err := k.Tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("review the token: %w", err) // not cached: the API server may answer next time
	}
	if !tr.Status.Authenticated {
		err := fmt.Errorf("%w: the API server does not accept the token", errUnauthenticated)
		k.users.Add(sum, err, k.TTL)
		return nil, err
	}
	u := tr.Status.User
	k.users.Add(sum, &u, k.TTL)
	return &u, nil
}

func (k *Kubernetes) decide(ctx context.Context, u *authenticationv1.UserInfo, a Access) error {
	key := fmt.Sprintf("%s\x00%s\x00%v\x00%s\x00%s\x00%s\x00%s", u.Username, u.UID, u.Groups, a.Verb, a.Resource, a.Namespace, a.Name)
	if v, ok := k.decisions.Get(key); ok {
		if v == nil {
			return nil
		}
		return v.(error)
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for name, v := range u.Extra {
		extra[name] = authorizationv1.ExtraValue(v)
	}
	sar, err := k.Reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.Verb, Group: "kollect.dev", Resource: a.Resource, Namespace: a.Namespace, Name: a.Name},
	}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("review the access: %w", err)
	}
	var out error
	if !sar.Status.Allowed {
		where := "in every namespace"
		if a.Namespace != "" {
			where = "in namespace " + a.Namespace
		}
		out = fmt.Errorf("%w: %s may not %s %s.kollect.dev %s", errForbidden, u.Username, a.Verb, a.Resource, where)
	}
	k.decisions.Add(key, out, k.TTL)
	return out
}
