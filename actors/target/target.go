package target

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"kollect.dev/kollect/actors"
	"kollect.dev/kollect/actors/messages"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/collect"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/model/selection"
)

// Source is one GVR the target reads, with its cached objects.
type Source struct {
	GVR   schema.GroupVersionResource
	GVK   schema.GroupVersionKind
	Store informers.Store
}

// Config is a compiled target: built by the controller once per target or
// profile generation.
type Config struct {
	Ref        messages.TargetRef
	Evaluator  *collect.Evaluator
	Sources    []Source
	Generation int64
	// Profile and GVK label the target's profile series; Metrics are the
	// profile's (none: a sum per numeric attribute); the series are
	// computed at most once per SampleEvery after a row change.
	Profile, GVK string
	Metrics      []Metric
	SampleEvery  time.Duration
}

// Configure replaces the target's configuration; every cached object is
// evaluated again.
type Configure struct{ Config *Config }

// Freeze stops the target from collecting while it is degraded (its
// profile is missing or does not compile, its kind cannot be listed): it
// keeps the rows it last collected, so inventories keep exporting them,
// until a Configure resumes it. Only a deleted or suspended target drops
// its rows (the engine stops it).
type Freeze struct{}

// Report is the target's observed state.
type Report struct {
	Ref                 messages.TargetRef
	Generation          int64
	Count               int
	ExtractionFailures  int
	LastExtractionError string
	// Profile, GVK and Series are the target's profile series;
	// Series is a new value only when they were computed again.
	Profile, GVK string
	Series       *Series
}

// Reporter receives reports; it must not block.
type Reporter interface {
	TargetReport(r Report)
}

// Namespaces reads namespace metadata for selection.
type Namespaces interface {
	Namespace(name string) *unstructured.Unstructured
}

// objKey is an object of one of the configuration's sources: the source
// (a pointer into Config.Sources, which a new configuration replaces
// together with every key) and the informer's key. The pointer keeps the
// row map's key at 24 bytes; the GVR it stands for was 48 more per row.
type objKey struct {
	src *Source
	key string
}

type actorState struct {
	inbox    *Inbox
	ns       Namespaces
	reporter Reporter
	metrics  *actors.Metrics
	clock    actors.Clock

	cfg *Config
	// listed is true once the rows are a complete view of a configuration
	// whose informers had synced; only then do subscribers get them.
	listed bool
	// frozen: degraded; events are dropped and rows kept as they were.
	frozen   bool
	rows     map[objKey]*rows.Row
	failures map[objKey]string
	// inBurst: the last change sent said more events were waiting.
	inBurst  bool
	lastErr  string
	subs     map[string]subscription
	reported Report

	// series are the last profile series computed; seriesDirty says rows
	// changed since, seriesAt when, seriesTimer waits out the interval.
	series      *Series
	seriesDirty bool
	seriesAt    time.Time
	seriesTimer func()
}

// seriesDue: the sample interval has passed since the last series.
type seriesDue struct{}

type subscription struct {
	pid    *actor.PID
	filter map[string]bool // target namespaces; nil: all
}

func (s subscription) wants(targetNamespace string) bool {
	return s.filter == nil || s.filter[targetNamespace]
}

// send delivers a change to one subscriber, filtered to what it wants;
// a change that ends a burst (end) reaches it even when nothing in it is
// for it.
func (s subscription) send(ctx actor.Context, m *messages.RowsChanged, end bool) {
	if s.filter == nil {
		ctx.Send(s.pid, m)
		return
	}
	out := &messages.RowsChanged{Target: m.Target, Replace: m.Replace, More: m.More, Trace: m.Trace}
	for _, r := range m.Upserts {
		if s.wants(r.TargetNamespace) {
			out.Upserts = append(out.Upserts, r)
		}
	}
	for _, k := range m.Deletes {
		if s.wants(k.TargetNamespace) {
			out.Deletes = append(out.Deletes, k)
		}
	}
	if out.Replace || len(out.Upserts) > 0 || len(out.Deletes) > 0 || end {
		ctx.Send(s.pid, out)
	}
}

// Props builds the actor's props; clk is the engine's clock (nil: the
// real one).
func Props(inbox *Inbox, ns Namespaces, reporter Reporter, metrics *actors.Metrics, name string, clk actors.Clock) *actor.Props {
	clk = actors.OrReal(clk)
	return actor.PropsFromProducer(func() actor.Actor {
		return &actorState{inbox: inbox, ns: ns, reporter: reporter, metrics: metrics, clock: clk,
			rows: map[objKey]*rows.Row{}, failures: map[objKey]string{}, subs: map[string]subscription{}}
	}, actor.WithMailbox(actor.Unbounded(metrics.Mailbox("target", name)...)))
}

func (a *actorState) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		// After a supervised restart, resume with the last configuration
		// and subscribers; rows are rebuilt from the informer caches. A
		// frozen target has released its informers: it waits for the next
		// Configure, and its inventories keep the rows they hold.
		cfg, subs, frozen := a.inbox.recall()
		a.cfg, a.subs, a.frozen = cfg, subs, frozen
		if cfg != nil && !frozen {
			a.resync(ctx)
		}
		a.inbox.Bind(ctx.Self())
	case *actor.Restarting:
		a.metrics.Restarted("target")
		a.metrics.ItemsDelta(-len(a.rows))
		a.stopSeries()
	case seriesDue:
		a.seriesTimer = nil
		a.maybeSeries(ctx)
	case *Configure:
		a.cfg, a.frozen = msg.Config, false
		a.inbox.remember(a.cfg, a.subs, false)
		a.resync(ctx)
	case *Freeze:
		a.frozen = true
		a.inbox.remember(a.cfg, a.subs, true)
		a.inbox.drain()
		if a.inBurst { // the burst's rest is dropped: no inventory waits for it
			a.publish(ctx, nil, nil, trace.SpanContext{}, false)
		}
	case wake:
		d := a.inbox.drain()
		if a.cfg == nil || a.frozen {
			return
		}
		if d.relist {
			a.resync(ctx)
			return
		}
		_, span := actors.Tracer().Start(context.Background(), "kollect.collect")
		defer span.End()
		if span.IsRecording() { // attributes cost nothing when tracing is off
			span.SetAttributes(attribute.String(actors.AttrTarget, a.ref().String()), attribute.Int("kollect.events", len(d.events)),
				attribute.Int("kollect.namespaces", len(d.namespaces)))
		}
		start := a.clock.Now()
		var ups []*rows.Row
		var dels []rows.Key
		if len(d.namespaces) > 0 {
			ups, dels = a.evaluateNamespaces(d.namespaces)
		}
		u, gone := a.applyAll(d)
		n := len(d.events)
		a.inbox.recycle(d.events) // clears a full slice's map for the next
		ups, dels = append(ups, u...), append(dels, gone...)
		a.metrics.Dispatched(n, a.clock.Since(start))
		a.countMismatches()
		if span.IsRecording() {
			span.SetAttributes(attribute.Int("kollect.rows.upserted", len(ups)), attribute.Int("kollect.rows.deleted", len(dels)))
		}
		a.publish(ctx, ups, dels, span.SpanContext(), d.more)
	case *messages.Subscribe:
		sub := subscription{pid: msg.Inventory, filter: msg.TargetNamespaces}
		a.subs[msg.Inventory.String()] = sub
		a.inbox.remember(a.cfg, a.subs, a.frozen)
		if a.listed { // otherwise the first resync answers
			sub.send(ctx, &messages.RowsChanged{Target: a.ref(), Upserts: a.all(), Replace: true}, false)
		}
	case *messages.Unsubscribe:
		delete(a.subs, msg.Inventory.String())
		a.inbox.remember(a.cfg, a.subs, a.frozen)
	case *actor.Stopping:
		for _, sub := range a.subs {
			ctx.Send(sub.pid, &messages.TargetGone{Target: a.ref()})
		}
		a.metrics.ItemsDelta(-len(a.rows))
		a.stopSeries()
	}
}

func (a *actorState) ref() messages.TargetRef {
	if a.cfg == nil {
		return messages.TargetRef{}
	}
	return a.cfg.Ref
}

// resync evaluates every cached object again (on the batch's workers) and
// sends the complete row set to subscribers.
func (a *actorState) resync(ctx actor.Context) {
	before := len(a.rows)
	lists, n := make([][]*unstructured.Unstructured, len(a.cfg.Sources)), 0
	var unreadable []objKey
	for i := range a.cfg.Sources {
		objs, bad := a.listReadable(a.cfg.Sources[i].Store)
		lists[i], n = objs, n+len(objs)
		for _, key := range bad {
			unreadable = append(unreadable, objKey{&a.cfg.Sources[i], key})
		}
	}
	batch := make([]outcome, 0, n)
	for i, list := range lists {
		src := &a.cfg.Sources[i]
		for _, obj := range list {
			batch = append(batch, outcome{k: objKey{src, objectKey(obj)}, src: src, obj: obj})
		}
	}
	a.evaluateAll(batch)
	a.countMismatches()
	last := a.lastRows(unreadable)
	a.rows, a.failures = make(map[objKey]*rows.Row, len(batch)), map[objKey]string{}
	for i := range batch {
		a.store(batch[i].k, batch[i].row, batch[i].err)
	}
	for i, k := range unreadable {
		if last[i] != nil {
			a.rows[k] = last[i]
		}
		a.unreadable(k)
	}
	a.metrics.ItemsDelta(len(a.rows) - before)
	a.listed, a.inBurst = true, false // the complete list ends any burst
	full := &messages.RowsChanged{Target: a.ref(), Upserts: a.all(), Replace: true}
	for _, sub := range a.subs {
		sub.send(ctx, full, false)
	}
	a.seriesDirty = true
	a.maybeSeries(ctx)
	a.report()
}

// listReadable lists the store's objects in the namespaces the target's
// selection may read: a tenant's target in a cluster of a thousand teams
// decodes its own namespace's objects, not every team's. A namespace the
// selection rules out holds no row (Selection.Matches tests the namespace
// first), so this lists exactly what evaluation would keep, and less.
func (a *actorState) listReadable(st informers.Store) ([]*unstructured.Unstructured, []string) {
	names, ok := st.Namespaces()
	if !ok || a.ns == nil {
		return st.List()
	}
	readable := names[:0:0]
	for _, name := range names {
		if a.mayRead(name) {
			readable = append(readable, name)
		}
	}
	if len(readable) == 0 {
		return nil, nil // List() would read every namespace
	}
	return st.List(readable...)
}

// mayRead reports whether the selection may collect objects of the
// namespace, as it stands. A lookup that fails is left to evaluation,
// which contains it.
func (a *actorState) mayRead(name string) (may bool) {
	defer func() {
		if recover() != nil {
			may = true
		}
	}()
	sel := a.cfg.Evaluator.Selection
	if !sel.MayMatchNamespace(name) {
		return false
	}
	return sel.NamespaceMatches(selection.NamespaceOf(name, a.ns.Namespace(name)))
}

func (a *actorState) all() []*rows.Row {
	out := make([]*rows.Row, 0, len(a.rows))
	for _, r := range a.rows {
		out = append(out, r)
	}
	return out
}

func (a *actorState) source(gvr schema.GroupVersionResource) *Source {
	for i := range a.cfg.Sources {
		if a.cfg.Sources[i].GVR == gvr {
			return &a.cfg.Sources[i]
		}
	}
	return nil
}

// parallelMin is the number of events each worker must get before a
// batch is spread over more than one: below it, starting workers costs
// more than it saves.
const parallelMin = 256

// outcome is one event of a batch: its object and, once evaluated, the row
// or the error.
type outcome struct {
	k    objKey
	src  *Source
	obj  *unstructured.Unstructured
	row  *rows.Row
	err  error
	gone bool
}

// applyAll handles a drained batch (one event per object): the objects are
// evaluated on up to GOMAXPROCS workers (the evaluator is safe for
// concurrent use; a batch holds each object once, so no object's events
// are reordered), then their rows are stored and compared in this actor,
// one at a time. It returns the upserted rows and the deleted keys.
func (a *actorState) applyAll(d drained) ([]*rows.Row, []rows.Key) {
	batch := make([]outcome, 0, len(d.events))
	srcs := make([]*Source, len(d.gvrs)) // each resource's source, looked up once
	for i, gvr := range d.gvrs {
		srcs[i] = a.source(gvr)
	}
	for k, p := range d.events {
		src := srcs[k.gvr]
		if src == nil {
			continue
		}
		batch = append(batch, outcome{k: objKey{src, k.key}, src: src, obj: p.obj, gone: p.gone})
	}
	a.evaluateAll(batch)
	var ups []*rows.Row
	var dels []rows.Key
	for i := range batch {
		o := &batch[i]
		old := a.rows[o.k]
		var row *rows.Row
		if o.gone {
			delete(a.rows, o.k)
			delete(a.failures, o.k)
		} else {
			row = a.store(o.k, o.row, o.err)
		}
		if u, d := a.diff(o.k, old, row); u != nil {
			ups = append(ups, u)
		} else if d != nil {
			dels = append(dels, *d)
		}
	}
	return ups, dels
}

// evaluateAll sets the row or the error of every outcome not gone, on up
// to GOMAXPROCS workers for a large batch (the evaluator is safe for
// concurrent use; a batch holds each object once).
func (a *actorState) evaluateAll(batch []outcome) {
	evaluate := func(part []outcome) {
		for i := range part {
			if o := &part[i]; !o.gone {
				o.row, o.err = a.row(o.src.GVK, o.obj)
			}
		}
	}
	if workers := min(runtime.GOMAXPROCS(0), len(batch)/parallelMin); workers > 1 {
		var wg sync.WaitGroup
		chunk := (len(batch) + workers - 1) / workers
		for lo := chunk; lo < len(batch); lo += chunk {
			wg.Add(1)
			go func(part []outcome) {
				defer wg.Done()
				evaluate(part)
			}(batch[lo:min(lo+chunk, len(batch))])
		}
		evaluate(batch[:chunk])
		wg.Wait()
	} else {
		evaluate(batch)
	}
}

func (a *actorState) diff(k objKey, old, row *rows.Row) (*rows.Row, *rows.Key) {
	switch {
	case row == nil && old != nil:
		a.metrics.ItemsDelta(-1)
		key := old.Key()
		return nil, &key
	case row != nil && old == nil:
		a.metrics.ItemsDelta(1)
		return row, nil
	case row != nil && !row.Equal(old):
		return row, nil
	}
	return nil, nil
}

// evaluateNamespaces re-evaluates the objects of the namespaces whose
// labels changed.
func (a *actorState) evaluateNamespaces(nss map[string]bool) ([]*rows.Row, []rows.Key) {
	var ups []*rows.Row
	var dels []rows.Key
	names := slices.Collect(maps.Keys(nss))
	for i := range a.cfg.Sources {
		src := &a.cfg.Sources[i]
		objs, bad := src.Store.List(names...)
		for _, key := range bad {
			a.unreadable(objKey{src, key}) // its row stays as it is
		}
		for _, obj := range objs {
			k := objKey{src, objectKey(obj)}
			old := a.rows[k]
			row := a.evaluate(k, obj)
			if u, d := a.diff(k, old, row); u != nil {
				ups = append(ups, u)
			} else if d != nil {
				dels = append(dels, *d)
			}
		}
	}
	for _, name := range names {
		if a.ns != nil && a.ns.Namespace(name) == nil { // deleted: its contents went before it
			a.cfg.Evaluator.ForgetNamespace(name)
		}
	}
	return ups, dels
}

// objectKey is the informer's key: namespace/name, or name for
// cluster-scoped objects.
func objectKey(obj *unstructured.Unstructured) string {
	return cache.MetaObjectToName(obj).String()
}

// evaluate runs selection and extraction for the object at k and stores
// the result: the row, or its absence.
func (a *actorState) evaluate(k objKey, obj *unstructured.Unstructured) *rows.Row {
	row, err := a.row(k.src.GVK, obj)
	return a.store(k, row, err)
}

// store records an object's evaluation: its row, or its absence and why.
func (a *actorState) store(k objKey, row *rows.Row, err error) *rows.Row {
	switch {
	case err != nil:
		delete(a.rows, k)
		a.failures[k] = err.Error()
		a.lastErr = fmt.Sprintf("%s: %v", k.key, err)
		return nil
	case row == nil:
		delete(a.rows, k)
		delete(a.failures, k)
		return nil
	}
	delete(a.failures, k)
	a.rows[k] = row
	return row
}

// unreadableError is the failure of an object whose cached copy could not
// be decoded.
const unreadableError = "its cached object could not be read; its last row is kept"

// unreadable records that the cached object at k exists but could not be
// read: it is a failure, not a delete, so the caller keeps its last row.
func (a *actorState) unreadable(k objKey) {
	a.failures[k] = unreadableError
	a.lastErr = k.key + ": " + unreadableError
}

// lastRows returns the current row of each key (nil where there is none),
// matched by kind and key: a new configuration's sources are new values,
// so the keys' source pointers may differ from the rows'.
func (a *actorState) lastRows(keys []objKey) []*rows.Row {
	if len(keys) == 0 {
		return nil
	}
	type at struct {
		gvr schema.GroupVersionResource
		key string
	}
	want := make(map[at]int, len(keys))
	for i, k := range keys {
		want[at{k.src.GVR, k.key}] = i
	}
	out := make([]*rows.Row, len(keys))
	for k, r := range a.rows {
		if i, ok := want[at{k.src.GVR, k.key}]; ok {
			out[i] = r
		}
	}
	return out
}

// countMismatches records the objects the evaluator turned away by their
// namespace since it last did.
func (a *actorState) countMismatches() {
	for gvk, n := range a.cfg.Evaluator.TakeMismatches() {
		for _, src := range a.cfg.Sources {
			if src.GVK == gvk {
				a.metrics.NamespaceMismatches(src.GVR, n)
				break
			}
		}
	}
}

// row evaluates one object; a panic in selection or extraction (a bug, or
// an input nobody foresaw) fails that object alone, reported as an
// extraction failure, instead of crashing the actor on every retry.
func (a *actorState) row(gvk schema.GroupVersionKind, obj *unstructured.Unstructured) (row *rows.Row, err error) {
	defer func() {
		if p := recover(); p != nil {
			row, err = nil, fmt.Errorf("evaluation panicked: %v", p)
		}
	}()
	return a.cfg.Evaluator.Row(gvk, obj, a.ns.Namespace)
}

// publish sends a change to the subscribers; more says events wait behind
// it. The end of a burst is sent even when its last slice changed nothing,
// so no inventory waits for it.
func (a *actorState) publish(ctx actor.Context, ups []*rows.Row, dels []rows.Key, sc trace.SpanContext, more bool) {
	changed, end := len(ups) > 0 || len(dels) > 0, a.inBurst && !more
	if changed || end {
		msg := &messages.RowsChanged{Target: a.ref(), Upserts: ups, Deletes: dels, Trace: sc, More: more}
		for _, sub := range a.subs {
			sub.send(ctx, msg, end)
		}
		a.inBurst = more
	}
	if changed {
		a.seriesDirty = true
		a.maybeSeries(ctx)
	}
	a.report()
}

// maybeSeries computes the profile series after a row change, at most once
// per sample interval: sooner changes wait for the interval's timer.
func (a *actorState) maybeSeries(ctx actor.Context) {
	if !a.seriesDirty || a.cfg == nil || a.reporter == nil {
		return
	}
	if wait := a.cfg.SampleEvery - a.clock.Since(a.seriesAt); !a.seriesAt.IsZero() && wait > 0 {
		if a.seriesTimer == nil {
			a.seriesTimer = actors.SendAfter(a.clock, ctx.ActorSystem().Root, wait, ctx.Self(), seriesDue{})
		}
		return
	}
	a.series, a.seriesAt, a.seriesDirty = computeSeries(a.rows, a.cfg.Metrics), a.clock.Now(), false
	a.report()
}

func (a *actorState) stopSeries() {
	if a.seriesTimer != nil {
		a.seriesTimer()
		a.seriesTimer = nil
	}
}

func (a *actorState) report() {
	r := Report{Ref: a.ref(), Generation: a.cfg.Generation, Count: len(a.rows), ExtractionFailures: len(a.failures),
		Profile: a.cfg.Profile, GVK: a.cfg.GVK, Series: a.series}
	if len(a.failures) > 0 {
		r.LastExtractionError = a.lastErr
	}
	if r != a.reported && a.reporter != nil {
		a.reported = r
		a.reporter.TargetReport(r)
	}
}
