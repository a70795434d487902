package main

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// statuses reads the status of every object of a kollect list kind, by
// namespace/name.
func statuses(ctx context.Context, c client.Client, listKind string) (map[string]any, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "kollect.dev", Version: "v1alpha1", Kind: listKind})
	if err := c.List(ctx, list); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(list.Items))
	for _, u := range list.Items {
		out[u.GetNamespace()+"/"+u.GetName()] = u.Object["status"]
	}
	return out, nil
}

// clusterStatuses are the statuses of every target and inventory.
type clusterStatuses struct{ targets, inventories map[string]any }

func readStatuses(ctx context.Context, c client.Client) (clusterStatuses, error) {
	var s clusterStatuses
	var err error
	if s.targets, err = statuses(ctx, c, "KollectTargetList"); err != nil {
		return s, err
	}
	s.inventories, err = statuses(ctx, c, "KollectInventoryList")
	return s, err
}

// StatusChanges says how many objects' statuses differ between two reads
// and which fields moved, counted over every changed object: what a
// restart wrote that it need not have.
type StatusChanges struct {
	Objects int            `json:"objects"`
	Fields  map[string]int `json:"fields,omitempty"`
	// Example is, per field, one object's change: "ns/name: before → after".
	Example map[string]string `json:"example,omitempty"`
}

func (s StatusChanges) String() string {
	fields := make([]string, 0, len(s.Fields))
	for f := range s.Fields {
		fields = append(fields, f)
	}
	sort.Slice(fields, func(i, j int) bool { return s.Fields[fields[i]] > s.Fields[fields[j]] })
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		parts = append(parts, fmt.Sprintf("%s ×%d", f, s.Fields[f]))
	}
	return fmt.Sprintf("%d (%s)", s.Objects, strings.Join(parts, ", "))
}

// Examples lists one change of each field, a line each.
func (s StatusChanges) Examples() string {
	lines := make([]string, 0, len(s.Example))
	for f, e := range s.Example {
		lines = append(lines, "  "+f+": "+e)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// diffStatuses compares two reads of statuses (objects in both only),
// ignoring the fields in ignore (leaf paths such as
// "sinkExports[database/pg].lastExportTime").
func diffStatuses(before, after map[string]any, ignore ...string) StatusChanges {
	out := StatusChanges{Fields: map[string]int{}, Example: map[string]string{}}
	for key, b := range before {
		a, ok := after[key]
		if !ok {
			continue
		}
		var moved []string
		examples := map[string]string{}
		leafDiff("", b, a, &moved, examples)
		moved = slices.DeleteFunc(moved, func(f string) bool { return slices.Contains(ignore, f) })
		if len(moved) == 0 {
			continue
		}
		out.Objects++
		for _, f := range slices.Compact(slices.Sorted(slices.Values(moved))) {
			out.Fields[f]++
			if _, ok := out.Example[f]; !ok {
				out.Example[f] = key + ": " + examples[f]
			}
		}
	}
	return out
}

// leafDiff appends the paths where a and b differ. Lists of objects are
// matched by their "type" or "name" field when they have one (conditions,
// sink exports), else by index; their elements' path is "list[key]".
func leafDiff(path string, a, b any, out *[]string, examples map[string]string) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			*out = append(*out, path)
			examples[path] = fmt.Sprintf("%v → %v", a, b)
			return
		}
		for k := range union(av, bv) {
			leafDiff(join(path, k), av[k], bv[k], out, examples)
		}
	case []any:
		bv, ok := b.([]any)
		if !ok {
			*out = append(*out, path)
			examples[path] = fmt.Sprintf("%v → %v", a, b)
			return
		}
		am, bm := byKey(av), byKey(bv)
		for k := range union(am, bm) {
			leafDiff(path+"["+k+"]", am[k], bm[k], out, examples)
		}
	default:
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, path)
			if _, ok := examples[path]; !ok {
				examples[path] = fmt.Sprintf("%v → %v", a, b)
			}
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func union(a, b map[string]any) map[string]bool {
	keys := make(map[string]bool, len(a)+len(b))
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

func byKey(items []any) map[string]any {
	out := make(map[string]any, len(items))
	for i, it := range items {
		key := fmt.Sprint(i)
		if m, ok := it.(map[string]any); ok {
			for _, field := range []string{"type", "name"} {
				if v, ok := m[field].(string); ok {
					key = v
					break
				}
			}
		}
		out[key] = it
	}
	return out
}

// conditionWatch counts, over a span, the versions of every inventory the
// API server stored whose Synced condition said anything but True, by
// reason: what a restart said in between, which two reads around it miss.
type conditionWatch struct {
	mu      sync.Mutex
	reasons map[string]int
	stop    context.CancelFunc
	done    chan struct{}
}

func watchInventoryConditions(ctx context.Context, cfg *rest.Config) (*conditionWatch, error) {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	gvr := schema.GroupVersionResource{Group: "kollect.dev", Version: "v1alpha1", Resource: "kollectinventories"}
	ctx, cancel := context.WithCancel(ctx)
	list, err := dc.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		cancel()
		return nil, err
	}
	w, err := dc.Resource(gvr).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		cancel()
		return nil, err
	}
	cw := &conditionWatch{reasons: map[string]int{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(cw.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type != watch.Modified {
				continue
			}
			if status, reason := conditionOf(u, "Synced"); status != "True" {
				cw.mu.Lock()
				cw.reasons[status+"/"+reason]++
				cw.mu.Unlock()
			}
		}
	}()
	return cw, nil
}

// finish stops the watch and returns the count of each Synced status and
// reason that was not True.
func (cw *conditionWatch) finish() map[string]int {
	cw.stop()
	<-cw.done
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return cw.reasons
}
