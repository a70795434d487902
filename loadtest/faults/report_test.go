package faults

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// A report is one table: per fault scenario and sink, the rows lost,
// wrong, orphaned and duplicated when the scenario's last check read the
// sink (all 0 when it passed), and how long the sink took to hold the
// cluster's rows. make faults writes it to KOLLECT_FAULTS_REPORT.
type reportLine struct {
	fault, sink                string
	lost, wrong, orphans, dups int
	converged                  time.Duration // -1: never
}

var (
	reportMu sync.Mutex
	reported []reportLine
)

// record adds the result of one scenario's final read to the report.
func (r *rig) record(want state, h *history, exact map[string]time.Duration) {
	reportMu.Lock()
	defer reportMu.Unlock()
	for _, name := range sinkNames {
		t := want.tally(h.states()[name])
		took, ok := exact[name]
		if !ok {
			took = -1
		}
		fault := r.t.Name()
		if r.seeding {
			fault += " (first export, before the fault)"
		}
		reported = append(reported, reportLine{fault: fault, sink: name, lost: len(t.lost), wrong: len(t.wrong),
			orphans: len(t.orphans), dups: len(t.dups), converged: took})
	}
}

// writeReport writes the report as a Markdown table to path, if set.
func writeReport(path string) error {
	if path == "" {
		return nil
	}
	reportMu.Lock()
	defer reportMu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "# Fault suite report (%d objects)\n\n", objects())
	b.WriteString("| Fault | Sink | Rows lost | Rows wrong | Orphans | Duplicates | Exact after |\n|---|---|---|---|---|---|---|\n")
	for _, l := range reported {
		took := "never"
		if l.converged >= 0 {
			took = l.converged.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %s |\n", l.fault, l.sink, l.lost, l.wrong, l.orphans, l.dups, took)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// recordRead records a read that found every sink exact (checked by the
// caller) took after the fault.
func (r *rig) recordRead(want state, h *history, took time.Duration) {
	exact := map[string]time.Duration{}
	for name, got := range h.states() {
		if want.diff(got) == "" {
			exact[name] = took
		}
	}
	r.record(want, h, exact)
}
