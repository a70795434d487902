package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Distribution tabulates the figures of repeated runs of one scenario:
// each figure's minimum, median and maximum, and every run's value in
// order, so one slow run shows rather than averaging away.
func Distribution(reps []*Report) string {
	type figure struct {
		name   string
		values []float64
		format func(float64) string
	}
	secs := func(v float64) string { return fmt.Sprintf("%.2f s", v) }
	var figs []*figure
	add := func(name string, v float64, format func(float64) string) {
		i := slices.IndexFunc(figs, func(f *figure) bool { return f.name == name })
		if i < 0 {
			figs = append(figs, &figure{name: name, format: format})
			i = len(figs) - 1
		}
		figs[i].values = append(figs[i].values, v)
	}
	for _, r := range reps {
		c := r.Cluster
		if c == nil {
			continue
		}
		add("every row in Git after the last create", c.AllInGit.Seconds(), secs)
		add("every row in Postgres after the last create", c.AllInPostgres.Seconds(), secs)
		for _, b := range c.GitBursts {
			add(fmt.Sprintf("Git: burst of %d %ss, after the last write", b.Objects, b.Change), b.InGit.Seconds(), secs)
		}
		add("operator CPU", c.OperatorCPU, secs)
		add("operator peak RSS", float64(c.PeakRSSBytes), func(v float64) string { return mib(int64(v)) })
		add("rows lost or stale (Postgres + Git)", float64(c.LostPostgres+c.LostGit), func(v float64) string { return fmt.Sprint(v) })
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d runs, started %s\n\n| figure | min | median | max | runs in order |\n|---|---|---|---|---|\n",
		len(reps), reps[0].StartedAt.UTC().Format(time.RFC3339))
	for _, f := range figs {
		sorted := slices.Sorted(slices.Values(f.values))
		each := make([]string, len(f.values))
		for i, v := range f.values {
			each[i] = strings.TrimSuffix(f.format(v), " s")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", f.name, f.format(sorted[0]), f.format(sorted[len(sorted)/2]), f.format(sorted[len(sorted)-1]), strings.Join(each, ", "))
	}
	return b.String()
}
