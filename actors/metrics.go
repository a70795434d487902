package actors

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Metrics are the actor-engine series. A nil *Metrics records nothing.
type Metrics struct {
	depth     *prometheus.GaugeVec
	processed *prometheus.CounterVec
	failed    *prometheus.CounterVec
	restarts  *prometheus.CounterVec
	circuit   *prometheus.GaugeVec
	exportDur *prometheus.HistogramVec
	exportB   *prometheus.CounterVec
	spill     prometheus.Counter
	conflicts *prometheus.CounterVec
	sinkErrs  *prometheus.CounterVec
	written   *prometheus.CounterVec
	lastOK    *prometheus.GaugeVec
	failures  *prometheus.GaugeVec
	invItems  *prometheus.GaugeVec
	rejected  *prometheus.GaugeVec
	items     prometheus.Gauge
	debounced *prometheus.CounterVec
	paced     *prometheus.CounterVec
	parts     *prometheus.GaugeVec
	queue     prometheus.Gauge
	blocked   prometheus.Counter
	dispatch  prometheus.Histogram
	mismatch  *prometheus.CounterVec
}

// NewMetrics registers the engine series with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kollect_actor_mailbox_depth",
			Help: "Messages waiting in an actor's mailbox."}, []string{"actor", "name"}),
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_actor_messages_processed_total",
			Help: "Messages an actor has handled."}, []string{"actor"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_actor_messages_failed_total",
			Help: "Messages whose handling panicked (the actor was restarted)."}, []string{"actor"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_actor_restarts_total",
			Help: "Actor restarts by their supervisor."}, []string{"actor"}),
		circuit: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kollect_sink_circuit_state",
			Help: "Circuit breaker per binding: 0 closed, 1 half-open, 2 open."}, []string{"inventory", "binding"}),
		exportDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kollect_export_duration_seconds",
			Help:    "Duration of one export to a backend.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}}, []string{"sink_type"}),
		exportB: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_export_bytes_total",
			Help: "Bytes the backends acknowledged."}, []string{"sink_type"}),
		spill: prometheus.NewCounter(prometheus.CounterOpts{Name: "kollect_export_spill_warn_total",
			Help: "Acknowledged exports of 1 MiB or more (upstream's spill warning, which it declared and never counted)."}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_export_conflicts_total",
			Help: "Writes another writer beat that an export redid: a Git push rebuilt on the branch's new tip (a fleet's clusters sharing a repository)."}, []string{"sink_type"}),
		sinkErrs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_sink_errors_total",
			Help: "Export failures by class."}, []string{"reason"}),
		written: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_sink_written_total",
			Help: "Rows (database sinks), messages (event sinks) or files (snapshot sinks) a binding's backend acknowledged writing."},
			[]string{"inventory", "binding", "sink_type"}),
		lastOK: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kollect_sink_last_success_timestamp_seconds",
			Help: "Unix time of a binding's last acknowledged export."}, []string{"inventory", "binding"}),
		failures: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kollect_sink_consecutive_failures",
			Help: "Failed exports of a binding since its last success."}, []string{"inventory", "binding"}),
		invItems: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kollect_inventory_items",
			Help: "Rows an inventory holds (what its next export carries)."}, []string{"inventory"}),
		rejected: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kollect_sink_rows_rejected",
			Help: "Rows a binding's backend refused and set aside in its last acknowledged export (a NUL PostgreSQL cannot store, a message over the broker's limit)."},
			[]string{"inventory", "binding"}),
		items: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kollect_collect_items_total",
			Help: "Rows held by all targets."}),
		debounced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_export_debounced_total",
			Help: "Snapshots offered to a binding whose sink already held their content: skipped until the interval's re-export."}, []string{"controller"}),
		paced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_export_paced_seconds_total",
			Help: "Time exports that were due waited because their binding's exports had used up its share of the time under constant change."}, []string{"sink_type"}),
		parts: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kollect_export_parts",
			Help: "Parts a snapshot binding's last acknowledged export was split into by its size ceiling (maxExportBytes)."},
			[]string{"inventory", "binding"}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kollect_collect_dispatch_queue_depth",
			Help: "Informer events waiting for their target actors (one per object: a newer event replaces a waiting one)."}),
		blocked: prometheus.NewCounter(prometheus.CounterOpts{Name: "kollect_collect_dispatch_backpressure_total",
			Help: "Informer events whose hand-over had to block: none here, a target's inbox takes every event at once."}),
		dispatch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kollect_collect_dispatch_duration_seconds",
			Help:    "Per-event processing time (selection, extraction, row update), averaged over each batch a target actor drains.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}}),
		mismatch: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_collect_namespace_mismatch_total",
			Help: "Objects a target turned away by their namespace (a shared informer hands every target of a kind the objects of all their namespaces)."},
			[]string{"group", "version", "resource"}),
	}
	reg.MustRegister(m.depth, m.processed, m.failed, m.restarts, m.circuit, m.exportDur, m.exportB, m.spill, m.conflicts, m.sinkErrs,
		m.written, m.lastOK, m.failures, m.invItems, m.rejected, m.items, m.debounced, m.paced, m.parts, m.queue, m.blocked, m.dispatch, m.mismatch)
	return m
}

// Debounced counts an offer skipped because the sink holds its content.
func (m *Metrics) Debounced(controller string) {
	if m != nil {
		m.debounced.WithLabelValues(controller).Inc()
	}
}

// Paced adds the time an export that was due waits for its binding's
// budget.
func (m *Metrics) Paced(sinkType string, wait time.Duration) {
	if m != nil {
		m.paced.WithLabelValues(sinkType).Add(wait.Seconds())
	}
}

// PacedCounter is the series Paced adds to, for tests.
func (m *Metrics) PacedCounter(sinkType string) prometheus.Counter {
	return m.paced.WithLabelValues(sinkType)
}

// DebouncedCounter is the series Debounced increments, for tests.
func (m *Metrics) DebouncedCounter(controller string) prometheus.Counter {
	return m.debounced.WithLabelValues(controller)
}

// Mailbox returns mailbox middleware that keeps the depth gauge of one
// actor.
func (m *Metrics) Mailbox(kind, name string) []actor.MailboxMiddleware {
	if m == nil {
		return nil
	}
	return []actor.MailboxMiddleware{&depthMiddleware{g: m.depth.WithLabelValues(kind, name), c: m.processed.WithLabelValues(kind)}}
}

// Forget drops the series of an actor that stopped.
func (m *Metrics) Forget(kind, name string) {
	if m != nil {
		m.depth.DeleteLabelValues(kind, name)
	}
}

// Restarted counts a supervised restart.
func (m *Metrics) Restarted(kind string) {
	if m != nil {
		m.restarts.WithLabelValues(kind).Inc()
		m.failed.WithLabelValues(kind).Inc()
	}
}

// Circuit records a binding's breaker state.
func (m *Metrics) Circuit(inventory, binding string, state float64) {
	if m != nil {
		m.circuit.WithLabelValues(inventory, binding).Set(state)
	}
}

// ForgetBinding drops a removed binding's series.
func (m *Metrics) ForgetBinding(inventory, binding string) {
	if m != nil {
		m.circuit.DeleteLabelValues(inventory, binding)
		m.lastOK.DeleteLabelValues(inventory, binding)
		m.failures.DeleteLabelValues(inventory, binding)
		m.rejected.DeleteLabelValues(inventory, binding)
		m.parts.DeleteLabelValues(inventory, binding)
		m.written.DeletePartialMatch(prometheus.Labels{"inventory": inventory, "binding": binding})
	}
}

// Outcome records a binding's export outcome: what was written on success
// (at is the acknowledgement time) and the consecutive failures so far.
func (m *Metrics) Outcome(inventory, binding, sinkType string, written int, at int64, failures int) {
	if m == nil {
		return
	}
	m.failures.WithLabelValues(inventory, binding).Set(float64(failures))
	if failures == 0 {
		m.written.WithLabelValues(inventory, binding, sinkType).Add(float64(written))
		m.lastOK.WithLabelValues(inventory, binding).Set(float64(at))
	}
}

// Parts records how many parts a binding's last acknowledged export was
// written as (0: the backend has no parts).
func (m *Metrics) Parts(inventory, binding string, n int) {
	if m != nil && n > 0 {
		m.parts.WithLabelValues(inventory, binding).Set(float64(n))
	}
}

// Rejected records how many rows a binding's last acknowledged export set
// aside.
func (m *Metrics) Rejected(inventory, binding string, n int) {
	if m != nil {
		m.rejected.WithLabelValues(inventory, binding).Set(float64(n))
	}
}

// Export records one export attempt: its duration, the writes it redid
// because another writer beat them, and its bytes or its failure class.
func (m *Metrics) Export(sinkType string, seconds float64, conflicts int, bytes int64, errClass string) {
	if m == nil {
		return
	}
	m.exportDur.WithLabelValues(sinkType).Observe(seconds)
	if conflicts > 0 {
		m.conflicts.WithLabelValues(sinkType).Add(float64(conflicts))
	}
	if errClass != "" {
		m.sinkErrs.WithLabelValues(errClass).Inc()
		return
	}
	m.exportB.WithLabelValues(sinkType).Add(float64(bytes))
	if bytes >= spillWarnBytes {
		m.spill.Inc()
	}
}

// spillWarnBytes is upstream's spill-warning size: it warned of exports
// of 1 MiB or more.
const spillWarnBytes = 1 << 20

// InventoryItems records an inventory's row count; a negative count drops
// the series (the inventory stopped).
func (m *Metrics) InventoryItems(inventory string, n int) {
	if m == nil {
		return
	}
	if n < 0 {
		m.invItems.DeleteLabelValues(inventory)
		return
	}
	m.invItems.WithLabelValues(inventory).Set(float64(n))
}

// ItemsDelta adjusts the total row gauge.
// Queued moves the dispatch queue depth by d events.
func (m *Metrics) Queued(d int) {
	if m != nil && d != 0 {
		m.queue.Add(float64(d))
	}
}

// NamespaceMismatches counts n objects of gvr a target turned away by
// their namespace.
func (m *Metrics) NamespaceMismatches(gvr schema.GroupVersionResource, n int) {
	if m != nil && n > 0 {
		m.mismatch.WithLabelValues(gvr.Group, gvr.Version, gvr.Resource).Add(float64(n))
	}
}

// Dispatched records a batch of n events a target actor handled in took.
func (m *Metrics) Dispatched(n int, took time.Duration) {
	if m != nil && n > 0 {
		m.dispatch.Observe(took.Seconds() / float64(n))
	}
}

func (m *Metrics) ItemsDelta(d int) {
	if m != nil && d != 0 {
		m.items.Add(float64(d))
	}
}

type depthMiddleware struct {
	n atomic.Int64
	g prometheus.Gauge
	c prometheus.Counter
}

func (d *depthMiddleware) MailboxStarted() {}
func (d *depthMiddleware) MessagePosted(any) {
	d.g.Set(float64(d.n.Add(1)))
}
func (d *depthMiddleware) MessageReceived(any) {
	d.g.Set(float64(d.n.Add(-1)))
	d.c.Inc()
}
func (d *depthMiddleware) MailboxEmpty() {}
