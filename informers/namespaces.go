package informers

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"kollect.dev/kollect/pipeline/projection"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// StartNamespaces starts the shared namespace informer and waits for it to
// list.
func (m *Manager) StartNamespaces(ctx context.Context) error {
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
	m.mu.Lock()
	e := m.namespaces
	m.mu.Unlock()
	if e == nil {
		return nil
	}
	obj, ok, _ := e.informer.GetStore().GetByKey(name)
	if !ok {
		return nil
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}

// NamespaceNames lists every cached namespace.
func (m *Manager) NamespaceNames() []string {
	m.mu.Lock()
	e := m.namespaces
	m.mu.Unlock()
	if e == nil {
		return nil
	}
	return e.informer.GetStore().ListKeys()
}
