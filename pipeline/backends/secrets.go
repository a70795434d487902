package backends

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// secretTTL is how long a Secret read for a backend is reused. Secrets
// are not cached by the manager (a cluster's every Secret in memory, and
// the RBAC to list them); without reuse, an edit of a sink a thousand
// inventories share read its Secret a thousand times, at the client's
// QPS. A rotated Secret reaches the backends within this much longer.
const secretTTL = 10 * time.Second

// secretsHeld bounds the Secrets kept at once.
const secretsHeld = 4096

// secretMemo keeps the Secrets read recently, by namespace and name.
type secretMemo struct {
	mu   sync.Mutex
	held map[client.ObjectKey]heldSecret
	now  func() time.Time
}

type heldSecret struct {
	sec  *corev1.Secret
	read time.Time
}

func newSecretMemo(now func() time.Time) *secretMemo {
	return &secretMemo{held: map[client.ObjectKey]heldSecret{}, now: now}
}

// reader reads Secrets through the memo and everything else through c.
func (m *secretMemo) reader(c client.Reader) client.Reader {
	if m == nil {
		return c
	}
	return memoReader{Reader: c, m: m}
}

type memoReader struct {
	client.Reader
	m *secretMemo
}

// Get reads a Secret from the memo when it was read within secretTTL;
// only successful reads are kept.
func (r memoReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	sec, ok := obj.(*corev1.Secret)
	if !ok {
		return r.Reader.Get(ctx, key, obj, opts...)
	}
	if held, ok := r.m.get(key); ok {
		held.DeepCopyInto(sec)
		return nil
	}
	// The API server's watch cache answers first (resourceVersion 0: no
	// read from etcd, at most moments old, well within secretTTL); a
	// Secret it does not hold yet, just created, is read from etcd.
	err := r.Reader.Get(ctx, key, sec, append(opts, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})...)
	if apierrors.IsNotFound(err) {
		err = r.Reader.Get(ctx, key, sec, opts...)
	}
	if err != nil {
		return err
	}
	r.m.put(key, sec.DeepCopy())
	return nil
}

func (m *secretMemo) get(key client.ObjectKey) (*corev1.Secret, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.held[key]
	if !ok || m.now().Sub(h.read) >= secretTTL {
		return nil, false
	}
	return h.sec, true
}

func (m *secretMemo) put(key client.ObjectKey, sec *corev1.Secret) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if len(m.held) >= secretsHeld {
		for k, h := range m.held {
			if now.Sub(h.read) >= secretTTL {
				delete(m.held, k)
			}
		}
	}
	if len(m.held) >= secretsHeld {
		return // all fresh: read again next time rather than grow
	}
	m.held[key] = heldSecret{sec: sec, read: now}
}
