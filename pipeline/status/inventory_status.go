package status

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kollect.dev/kollect/actors/inventory"
	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// Condition types and reasons used for inventories.
const (
	TypeSinkReachable = "SinkReachable"

	ReasonExported        = "Exported"
	ReasonPartiallySynced = "PartiallySynced"
	ReasonProgressing     = "Progressing"
	ReasonExportFailed    = "ExportFailed"
	ReasonExportTerminal  = "ExportTerminal"
	ReasonNoExport        = "NoExport"
	ReasonSinksReachable  = "SinksReachable"
	ReasonNoSinks         = "NoSinksConfigured"
	ReasonExportSucceeded = "ExportSucceeded"
	// ReasonWaitingForTargets: some target has not listed its objects yet
	// (the manager just started, or a target cannot start). The sinks that
	// acknowledged an export since the start get the other targets' rows,
	// with what they hold of the waiting ones unchanged; the rest wait.
	ReasonWaitingForTargets = "WaitingForTargets"
	// ReasonActorStopped: the inventory's actor failed too often and was
	// stopped by its supervisor.
	ReasonActorStopped = "ActorStopped"
)

func (w *Writer) writeInventory(ctx context.Context, key Key) error {
	w.mu.Lock()
	st := w.invs[key]
	if st == nil || st.verdict == nil {
		w.mu.Unlock()
		return nil
	}
	v := *st.verdict
	var rep *inventory.Report
	if st.report != nil && st.report.ID.Generation == v.Generation {
		r := *st.report
		rep = &r
	}
	w.mu.Unlock()
	if key.Kind == ClusterInventory {
		return w.writeClusterInventory(ctx, key, v, rep)
	}
	var inv kollectv1alpha1.KollectInventory
	if err := w.c.Get(ctx, key.NamespacedName, &inv); err != nil {
		return err
	}
	base := inv.DeepCopy()
	if !inventoryStatus(&inv.Status, v, rep) {
		return nil
	}
	w.observe(key, inv.Status.Conditions)
	if err := Patch(ctx, w.c, &inv, base); err != nil {
		return err
	}
	w.announceTransitions(&inv, base.Status.Conditions, inv.Status.Conditions)
	w.announceRejections(&inv, base.Status.SinkExports, inv.Status.SinkExports)
	return nil
}

// announceRejections records a Warning event on obj when a binding sets
// rows aside that it did not before (or other rows): what status shows, in
// the place `kubectl describe` and event pipelines look.
func (w *Writer) announceRejections(obj runtime.Object, before, after []kollectv1alpha1.InventorySinkExportStatus) {
	if w.Events == nil {
		return
	}
	prev := map[string]string{}
	for _, e := range before {
		prev[e.Name] = strings.Join(e.RejectedKeys, ",")
	}
	for _, e := range after {
		if e.RejectedCount == 0 || prev[e.Name] == strings.Join(e.RejectedKeys, ",") {
			continue
		}
		w.Events.Eventf(obj, nil, corev1.EventTypeWarning, "RowsRejected", "Export",
			"sink %s set aside %d row(s) it refused, first %s: %s; the rest of the export went through",
			e.Name, e.RejectedCount, strings.Join(e.RejectedKeys, ", "), e.RejectedReason)
	}
}

func (w *Writer) writeClusterInventory(ctx context.Context, key Key, v Verdict, rep *inventory.Report) error {
	var ci kollectv1alpha1.KollectClusterInventory
	if err := w.c.Get(ctx, key.NamespacedName, &ci); err != nil {
		return err
	}
	base := ci.DeepCopy()
	cs := &ci.Status
	s := kollectv1alpha1.KollectInventoryStatus{Conditions: cs.Conditions, ItemCount: cs.ItemCount, ExportedCount: cs.ExportedCount,
		LastExportTime: cs.LastExportTime, SinkExports: cs.SinkExports}
	if !inventoryStatus(&s, v, rep) {
		return nil
	}
	rejectedBefore := cs.SinkExports
	cs.Conditions, cs.ObservedGeneration, cs.ItemCount, cs.ExportedCount = s.Conditions, s.ObservedGeneration, s.ItemCount, s.ExportedCount
	cs.LastExportTime, cs.SinkExports, cs.TargetCount = s.LastExportTime, s.SinkExports, v.Targets
	if rep != nil {
		cs.NamespaceShards = nil
		for _, sh := range rep.Shards {
			cs.NamespaceShards = append(cs.NamespaceShards, kollectv1alpha1.NamespaceShardStatus{Namespace: sh.Namespace, ItemCount: sh.Items, TargetCount: sh.Targets,
				Checksum: sh.Checksum})
		}
		cs.NamespaceShardCount = len(cs.NamespaceShards)
	}
	if c := meta.FindStatusCondition(cs.Conditions, TypeSynced); c != nil && c.Reason != ReasonNoExport {
		setCondition(&cs.Conditions, "ExportSucceeded", c.Status, c.Reason, c.Message, v.Generation)
	}
	w.observe(key, cs.Conditions)
	if err := Patch(ctx, w.c, &ci, base); err != nil {
		return err
	}
	w.announceTransitions(&ci, base.Status.Conditions, cs.Conditions)
	w.announceRejections(&ci, rejectedBefore, cs.SinkExports)
	return nil
}

// inventoryStatus composes an inventory status; false means wait for the
// engine's first report.
func inventoryStatus(s *kollectv1alpha1.KollectInventoryStatus, v Verdict, rep *inventory.Report) bool {
	s.ObservedGeneration = v.Generation
	if v.Degraded() {
		setCondition(&s.Conditions, TypeDegraded, metav1.ConditionTrue, v.Reason, v.Message, v.Generation)
		setCondition(&s.Conditions, TypeSynced, metav1.ConditionFalse, v.Reason, v.Message, v.Generation)
		meta.RemoveStatusCondition(&s.Conditions, TypeReady)
		if rep != nil {
			s.ItemCount = rep.ItemCount
		}
		return true
	}
	if rep == nil {
		return false
	}
	if rep.Stopped != "" {
		setCondition(&s.Conditions, TypeDegraded, metav1.ConditionTrue, ReasonActorStopped, rep.Stopped, v.Generation)
		setCondition(&s.Conditions, TypeSynced, metav1.ConditionFalse, ReasonActorStopped, rep.Stopped, v.Generation)
		meta.RemoveStatusCondition(&s.Conditions, TypeReady)
		return true
	}
	items := s.ItemCount
	s.ItemCount = rep.ItemCount
	if applyBindings(s, rep, v.Generation) {
		s.ItemCount = items // the count the sinks hold stands until the targets list
	}
	shardWarning(&s.Conditions, rep.ItemCount, v.Generation)
	return true
}

// Upstream's shard warning, set on every reconcile: an inventory of
// ShardWarningRows rows or more says ExportShardWarning=True with reason
// ApproachingExportCap, removed below. Upstream's single-document exports
// neared their cap there; ours split into parts, so the condition keeps
// upstream's alerts and dashboards meaningful without a failure behind it.
const (
	TypeExportShardWarning = "ExportShardWarning"
	ReasonApproachingCap   = "ApproachingExportCap"
	ShardWarningRows       = 1800
)

func shardWarning(conds *[]metav1.Condition, items int, gen int64) {
	if items < ShardWarningRows {
		meta.RemoveStatusCondition(conds, TypeExportShardWarning)
		return
	}
	setCondition(conds, TypeExportShardWarning, metav1.ConditionTrue, ReasonApproachingCap,
		fmt.Sprintf("%d rows in one inventory (%d or more): exports larger than maxExportBytes are split into parts; "+
			"split the inventory into several if a consumer needs one document per inventory", items, ShardWarningRows), gen)
}

// lower is the smaller of two optional counts; nil is no count.
func lower(a, b *int64) *int64 {
	if a == nil || (b != nil && *b < *a) {
		return b
	}
	return a
}

// stillHolds reports whether a sinkExports entry says its sink
// acknowledged an export of generation gen.
func stillHolds(e kollectv1alpha1.InventorySinkExportStatus, gen int64) bool {
	return e.LastExportTime != nil && syncedAt(e.Conditions, gen)
}

// syncedAt reports whether conds say Synced=True for generation gen.
func syncedAt(conds []metav1.Condition, gen int64) bool {
	c := meta.FindStatusCondition(conds, TypeSynced)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
}

// applyBindings writes sinkExports and the aggregate conditions: an entry
// per binding, which keeps its last successful export while later
// attempts fail. It reports true when it left the conditions as they were:
// a manager that has just started (rep.Settling), whose targets are
// listing anew, while the inventory was Synced for this generation and
// every sink acknowledged an export of it, the last manager's or a
// holding one of this manager's that kept the waiting targets' rows.
// That is no change, and saying WaitingForTargets (Synced False, then True
// again a moment later) would cost two writes per inventory of every
// restart and unsay what the sinks hold. A target still not listed when
// the grace ends is reported as waiting.
func applyBindings(s *kollectv1alpha1.KollectInventoryStatus, rep *inventory.Report, gen int64) (unchanged bool) {
	prev := map[string]kollectv1alpha1.InventorySinkExportStatus{}
	for _, e := range s.SinkExports {
		prev[e.Name] = e
	}
	s.SinkExports = nil
	wasSynced := syncedAt(s.Conditions, gen)
	exported, failed, pending, terminal := 0, 0, 0, 0
	var minCount *int64
	var failures []string
	for _, b := range rep.Bindings {
		e := prev[b.Key]
		e.Name, e.Circuit, e.ConsecutiveFailures = b.Key, string(b.Circuit), int32(b.Failures)
		if !b.LastExport.IsZero() {
			t := metav1.NewTime(b.LastExport)
			n, w, by := int64(b.Exported), int64(b.Written), b.Bytes
			e.LastExportTime = &t
			if !b.Partial || e.ExportedCount == nil {
				e.LastChecksum, e.ExportedCount = b.LastChecksum, &n
			} // else: the sink still holds the kept rows; the last complete export's count and checksum stand
			e.LastWrittenCount, e.LastExportBytes, e.LastExportParts = &w, &by, int32(b.Parts)
			e.RejectedCount, e.RejectedKeys, e.RejectedReason = int32(b.Rejected), b.RejectedKeys, b.RejectedReason
			minCount = lower(minCount, e.ExportedCount)
			if s.LastExportTime == nil || t.After(s.LastExportTime.Time) {
				s.LastExportTime = &t
			}
		}
		switch {
		case b.Err != "":
			failed++
			if b.Permanent {
				terminal++
			}
			failures = append(failures, fmt.Sprintf("%s: %s", b.Key, b.Err))
			setCondition(&e.Conditions, TypeSynced, metav1.ConditionFalse, ReasonExportFailed, b.Err, gen)
		case b.LastExport.IsZero() && stillHolds(e, gen):
			// This manager has not exported yet (it just started), but the
			// sink holds the export it acknowledged for this generation:
			// status keeps saying so. A restart changes nothing, in the
			// sinks or in what status reports of them.
			exported++
			minCount = lower(minCount, e.ExportedCount)
		case b.LastExport.IsZero():
			pending++
			setCondition(&e.Conditions, TypeSynced, metav1.ConditionFalse, ReasonProgressing, "first export in progress", gen)
		default:
			exported++
			setCondition(&e.Conditions, TypeSynced, metav1.ConditionTrue, ReasonExported, "export completed", gen)
		}
		s.SinkExports = append(s.SinkExports, e)
	}
	s.ExportedCount = minCount
	total := len(rep.Bindings)
	lastMsg := strings.Join(failures, "; ")
	if len(rep.Waiting) > 0 && rep.Settling && wasSynced && exported == total {
		return true
	}
	if len(rep.Waiting) > 0 && total > 0 {
		msg := fmt.Sprintf("waiting for %d target(s) to list their objects before exporting: %s", len(rep.Waiting), strings.Join(rep.Waiting, ", "))
		if rep.Holding {
			msg = fmt.Sprintf("holding the rows of %d target(s) that have not listed their objects: %s; the other targets' rows are exported, and what the sinks hold of these stays as it is until they list",
				len(rep.Waiting), strings.Join(rep.Waiting, ", "))
		}
		var waits []string
		for _, b := range rep.Bindings {
			if b.Waits {
				waits = append(waits, b.Key)
			}
		}
		if len(waits) > 0 {
			msg += fmt.Sprintf("; sink(s) %s export nothing until then: each writes every row into one document and has no export of this manager's to take the held rows from (a perResource layout would not wait)",
				strings.Join(waits, ", "))
		}
		setCondition(&s.Conditions, TypeSynced, metav1.ConditionFalse, ReasonWaitingForTargets, msg, gen)
		setCondition(&s.Conditions, TypeReady, metav1.ConditionFalse, ReasonWaitingForTargets, msg, gen)
		meta.RemoveStatusCondition(&s.Conditions, TypeDegraded)
		return false
	}
	switch {
	case total == 0:
		setCondition(&s.Conditions, TypeSynced, metav1.ConditionTrue, ReasonNoExport, "no family sink refs configured", gen)
		setCondition(&s.Conditions, TypeSinkReachable, metav1.ConditionTrue, ReasonNoSinks, "no sinks configured", gen)
		setCondition(&s.Conditions, TypeReady, metav1.ConditionTrue, ReasonNoExport, fmt.Sprintf("%d item(s) collected; no sinks configured", rep.ItemCount), gen)
		meta.RemoveStatusCondition(&s.Conditions, TypeDegraded)
	case failed > 0 && exported == 0 && pending == 0:
		reason := ReasonProgressing
		if terminal == failed {
			reason = ReasonExportTerminal
		}
		setCondition(&s.Conditions, TypeSynced, metav1.ConditionFalse, reason, fmt.Sprintf("%d sink(s) failed export; %s", failed, lastMsg), gen)
		setCondition(&s.Conditions, TypeDegraded, metav1.ConditionTrue, reason, lastMsg, gen)
		setCondition(&s.Conditions, TypeSinkReachable, metav1.ConditionFalse, ReasonExportFailed, lastMsg, gen)
		meta.RemoveStatusCondition(&s.Conditions, TypeReady)
	case failed > 0:
		setCondition(&s.Conditions, TypeSynced, metav1.ConditionFalse, ReasonPartiallySynced,
			fmt.Sprintf("%d/%d sinks exported; %d failed: %s", exported, total, failed, lastMsg), gen)
		setCondition(&s.Conditions, TypeSinkReachable, metav1.ConditionFalse, ReasonExportFailed, lastMsg, gen)
		setCondition(&s.Conditions, TypeReady, metav1.ConditionTrue, ReasonPartiallySynced, fmt.Sprintf("exported %d item(s) to %d of %d sink(s)", rep.ItemCount, exported, total), gen)
		meta.RemoveStatusCondition(&s.Conditions, TypeDegraded)
	case pending > 0:
		setCondition(&s.Conditions, TypeSynced, metav1.ConditionFalse, ReasonProgressing, fmt.Sprintf("%d of %d sink(s) exported", exported, total), gen)
		meta.RemoveStatusCondition(&s.Conditions, TypeDegraded)
	default:
		setCondition(&s.Conditions, TypeSynced, metav1.ConditionTrue, ReasonExported, fmt.Sprintf("exported to %d sink(s)", exported), gen)
		setCondition(&s.Conditions, TypeSinkReachable, metav1.ConditionTrue, ReasonExportSucceeded, "every sink acknowledged the latest export", gen)
		setCondition(&s.Conditions, TypeReady, metav1.ConditionTrue, ReasonExported, fmt.Sprintf("exported %d item(s) across %d sink(s)", rep.ItemCount, exported), gen)
		meta.RemoveStatusCondition(&s.Conditions, TypeDegraded)
	}
	return false
}
