// Package status writes the status of targets and inventories. Two sources
// feed it: reconcilers (is the object configured, or Degraded and why) and
// the engine's reports (live row counts, what each sink acknowledged). The
// Writer keeps the latest of each and merges them when a reconciler calls
// Write, once per reconcile. An engine report reaches the reconciler as an
// event on the kind's Source, enqueued no sooner than the flush interval,
// so the workqueue dedupes, backs off and bounds concurrency, and a busy
// cluster does not turn into a status-write storm. Reconcilers are the
// only writers of these statuses.
package status
