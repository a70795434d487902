package informers

import (
	"context"
	"fmt"
	"maps"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"kollect.dev/kollect/model/projection"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// OnlyNamespaces makes the namespace cache hold these namespaces only, each
// read with a GET every `every`: what a tenant install's Roles allow (a
// Role in a namespace grants get on that namespace, never a cluster-wide
// list or watch). Call it before StartNamespaces.
func (m *Manager) OnlyNamespaces(names []string, every time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.only, m.pollEvery = append([]string(nil), names...), every
}

// StartNamespaces starts the shared namespace informer and waits for it to
// list.
func (m *Manager) StartNamespaces(ctx context.Context) error {
	if m.only != nil {
		return m.pollNamespaces(ctx)
	}
	m.mu.Lock()
	if e := m.namespaces; e != nil {
		m.mu.Unlock()
		syncCtx, stop := context.WithTimeout(ctx, m.syncWait)
		defer stop()
		if !cache.WaitForCacheSync(syncCtx.Done(), e.informer.HasSynced) {
			return fmt.Errorf("list namespaces: informer did not sync within %s", m.syncWait)
		}
		return nil
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(m.dyn, namespacesGVR, "", m.resync, cache.Indexers{}, nil).Informer()
	// Selection reads a namespace's name, labels and annotations only.
	nsReads := projection.Base()
	_ = inf.SetTransform(func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			project(u, nsReads)
		}
		return obj, nil
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { m.namespaceChanged(obj) },
		UpdateFunc: func(old, obj any) {
			o, n := old.(*unstructured.Unstructured), obj.(*unstructured.Unstructured)
			if !maps.Equal(o.GetLabels(), n.GetLabels()) || !maps.Equal(o.GetAnnotations(), n.GetAnnotations()) {
				m.namespaceChanged(obj)
			}
		},
		DeleteFunc: func(obj any) { m.namespaceChanged(obj) },
	})
	runCtx, cancel := context.WithCancel(context.Background())
	m.namespaces = &generation{informer: inf, cancel: cancel}
	m.mu.Unlock()
	go inf.Run(runCtx.Done())

	syncCtx, stop := context.WithTimeout(ctx, m.syncWait)
	defer stop()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		return fmt.Errorf("list namespaces: informer did not sync within %s", m.syncWait)
	}
	return nil
}

func (m *Manager) namespaceChanged(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	m.mu.Lock()
	subs := make([]NamespaceSubscriber, 0, len(m.nsSubs))
	for _, s := range m.nsSubs {
		subs = append(subs, s)
	}
	m.mu.Unlock()
	for _, s := range subs {
		s.NamespaceChanged(u.GetName())
	}
}

// WatchNamespaces registers s for namespace changes under id.
func (m *Manager) WatchNamespaces(id string, s NamespaceSubscriber) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nsSubs[id] = s
}

// UnwatchNamespaces drops id's namespace subscription.
func (m *Manager) UnwatchNamespaces(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.nsSubs, id)
}

// Namespace returns the cached namespace, or nil.
func (m *Manager) Namespace(name string) *unstructured.Unstructured {
	st := m.nsStore()
	if st == nil {
		return nil
	}
	obj, ok, _ := st.GetByKey(name)
	if !ok {
		return nil
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}

// NamespaceNames lists every cached namespace.
func (m *Manager) NamespaceNames() []string {
	st := m.nsStore()
	if st == nil {
		return nil
	}
	return st.ListKeys()
}

// pollNamespaces reads the fixed namespaces once, then keeps reading them
// in the background; changes notify subscribers as the informer would.
func (m *Manager) pollNamespaces(ctx context.Context) error {
	m.mu.Lock()
	if m.nsPolled != nil {
		m.mu.Unlock()
		return nil
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	m.mu.Unlock()
	if err := m.pollOnce(ctx, store); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	m.mu.Lock()
	m.nsPolled = store
	m.namespaces = &generation{cancel: cancel}
	m.mu.Unlock()
	go func() {
		t := time.NewTicker(m.pollEvery)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
				_ = m.pollOnce(runCtx, store) // a failed read keeps the last one
			}
		}
	}()
	return nil
}

func (m *Manager) pollOnce(ctx context.Context, store cache.Store) error {
	nsReads := projection.Base()
	for _, name := range m.only {
		u, err := m.dyn.Resource(namespacesGVR).Get(ctx, name, metav1.GetOptions{})
		old, had, _ := store.GetByKey(name)
		switch {
		case apierrors.IsNotFound(err):
			if had {
				_ = store.Delete(old)
				m.namespaceChanged(old)
			}
			continue
		case err != nil:
			return fmt.Errorf("read namespace %s: %w", name, err)
		}
		project(u, nsReads)
		_ = store.Add(u)
		if o, ok := old.(*unstructured.Unstructured); !had || !ok || !maps.Equal(o.GetLabels(), u.GetLabels()) || !maps.Equal(o.GetAnnotations(), u.GetAnnotations()) {
			m.namespaceChanged(u)
		}
	}
	return nil
}

// nsStore is where namespaces are cached: the informer's store, or the
// polled one.
func (m *Manager) nsStore() cache.Store {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nsPolled != nil {
		return m.nsPolled
	}
	if m.namespaces == nil || m.namespaces.informer == nil {
		return nil
	}
	return m.namespaces.informer.GetStore()
}
