package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/rows"
)

// watchOutput is where --watch reports changes.
type watchOutput struct {
	w, stderr io.Writer
	format    string
	context   string
	sink      *sinkOutput
}

// change is one informer event for one target.
type change struct {
	run     *targetRun
	kind    listedKind
	obj     *unstructured.Unstructured
	deleted bool
}

// watch keeps the targets' rows current with informers and reports every
// row that changes, until ctx ends. With a sink, changed targets are
// exported again, batched over half a second.
func (c *collector) watch(ctx context.Context, runs []*targetRun, out watchOutput) error {
	events := make(chan change, 4096)
	factories := map[string]dynamicinformer.DynamicSharedInformerFactory{}
	for _, tr := range runs {
		for _, k := range tr.kinds {
			ns := ""
			if c.namespace != "" && k.namespaced {
				ns = c.namespace
			}
			f := factories[ns]
			if f == nil {
				f = dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, 0, ns, nil)
				factories[ns] = f
			}
			tr, k := tr, k
			send := func(obj any, deleted bool) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				if u, ok := obj.(*unstructured.Unstructured); ok {
					select {
					case events <- change{run: tr, kind: k, obj: u, deleted: deleted}:
					case <-ctx.Done():
					}
				}
			}
			inf := f.ForResource(k.gvr).Informer()
			// The cache itself never holds the applied copies: rows are
			// evaluated on what it hands out, which nobody may modify.
			if err := inf.SetTransform(stripBookkeeping); err != nil {
				return fatal("watch %s: %v", k.gvr.Resource, err)
			}
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(o any) { send(o, false) },
				UpdateFunc: func(_, o any) { send(o, false) },
				DeleteFunc: func(o any) { send(o, true) },
			}); err != nil {
				return fatal("watch %s: %v", k.gvr.Resource, err)
			}
		}
	}
	for _, f := range factories {
		f.Start(ctx.Done())
		f.WaitForCacheSync(ctx.Done())
	}
	fmt.Fprintln(out.stderr, "watching for changes; press Ctrl-C to stop")

	dirty := map[*targetRun]bool{}
	var flush <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			for _, f := range factories {
				f.Shutdown()
			}
			return nil
		case ev := <-events:
			typ, row := c.apply(ev)
			if row == nil {
				continue
			}
			if err := out.report(typ, ev.run, row, c.clock.Now()); err != nil {
				return fatal("write output: %v", err)
			}
			if out.sink != nil {
				dirty[ev.run] = true
				if flush == nil {
					flush = time.After(500 * time.Millisecond)
				}
			}
		case <-flush:
			flush = nil
			for tr := range dirty {
				if err := out.sink.export(ctx, tr.snapshot(c.clock.Now())); err != nil {
					fmt.Fprintf(out.stderr, "error: export %s/%s: %v\n", tr.target.Namespace, tr.target.Name, err)
					continue // stays dirty: retried with the next change
				}
				delete(dirty, tr)
			}
		}
	}
}

// apply updates a target's rows with one event and returns the change
// ("upsert" or "delete") and the row concerned, or a nil row when nothing
// changed.
func (c *collector) apply(ev change) (string, *rows.Row) {
	tr := ev.run
	key := rows.Key{TargetNamespace: tr.target.Namespace, TargetName: tr.target.Name, UID: string(ev.obj.GetUID())}
	old := tr.rows[key]
	var row *rows.Row
	if !ev.deleted {
		var err error
		if row, err = tr.ev.Row(ev.kind.gvk, ev.obj, c.namespaceOf); err != nil {
			fmt.Fprintf(c.stderr, "warning: %s %s/%s: %v\n", ev.kind.gvk.Kind, ev.obj.GetNamespace(), ev.obj.GetName(), err)
			return "", nil
		}
	}
	switch {
	case row == nil && old == nil, row != nil && row.Equal(old):
		return "", nil
	case row == nil:
		delete(tr.rows, key)
		return "delete", old
	}
	tr.rows[key] = row
	return "upsert", row
}

// report prints one change: a JSON line for ndjson/json/yaml, a table line
// otherwise.
func (o watchOutput) report(typ string, tr *targetRun, row *rows.Row, at time.Time) error {
	if o.sink != nil && o.format != "ndjson" {
		return nil // the sink is the output; changes are exported
	}
	switch o.format {
	case "ndjson", "json", "yaml":
		b, err := json.Marshal(struct {
			Type            string          `json:"type"`
			Context         string          `json:"context"`
			TargetNamespace string          `json:"targetNamespace"`
			TargetName      string          `json:"targetName"`
			Row             json.RawMessage `json:"row"`
		}{typ, o.context, tr.target.Namespace, tr.target.Name, row.JSON()})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(o.w, "%s\n", b)
		return err
	}
	as := row.Attributes()
	attrs := make([]string, 0, len(as))
	for _, a := range as { // in name order
		attrs = append(attrs, a.Name+"="+cell(as, a.Name, o.format == "wide"))
	}
	_, err := fmt.Fprintf(o.w, "%s %-6s %s/%s %s/%s %s %s\n", at.Format("15:04:05"), strings.ToUpper(typ),
		tr.target.Namespace, tr.target.Name, row.Namespace, row.Name, row.Kind, strings.Join(attrs, " "))
	return err
}

// stripBookkeeping is the watch informers' transform: managedFields and
// the last-applied annotation go before an object is cached.
func stripBookkeeping(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		informers.StripBookkeeping(u.Object)
	}
	return obj, nil
}
