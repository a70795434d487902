package status

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"kollect.dev/kollect/actors/target"
)

// profileSeries publishes the targets' profile-driven series:
// kollect_custom_resource_series{profile,gvk,series} and, for
// metrics with labels, kollect_custom_resource_labeled_series with one
// more label per label attribute, both summed over the targets that share
// a profile and kind. It is a collector: a metric's label names are its
// own, and a target's series go with it.
type profileSeries struct {
	mu     sync.Mutex
	by     map[Key]*target.Report // the last report with series, per target
	capped *prometheus.CounterVec
}

var (
	seriesDesc = prometheus.NewDesc("kollect_custom_resource_series",
		"Profile-derived series: object_count, and per spec.metrics entry (or, with none, per numeric attribute) the sum of the attribute over a target's rows; summed over targets sharing profile and kind.",
		[]string{"profile", "gvk", "series"}, nil)
	labeledHelp = "Profile-derived series by the values of the metric's label attributes (at most 200 tuples per series and target)."
)

func newProfileSeries() *profileSeries {
	return &profileSeries{by: map[Key]*target.Report{},
		capped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kollect_custom_resource_labeled_series_capped_total",
			Help: "Label tuples of a labelled profile series dropped beyond 200 (per target, each time its series are computed)."},
			[]string{"profile", "gvk", "series"})}
}

// record keeps a target's newly computed series.
func (p *profileSeries) record(key Key, r target.Report) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.by[key]; old != nil && old.Series == r.Series {
		return
	}
	p.by[key] = &r
	for name, l := range r.Series.Labeled {
		if l.Dropped > 0 {
			p.capped.WithLabelValues(r.Profile, r.GVK, name).Add(float64(l.Dropped))
		}
	}
}

func (p *profileSeries) forget(key Key) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.by, key)
}

// Describe sends nothing: the labelled series' label names come from the
// profiles (an unchecked collector).
func (p *profileSeries) Describe(chan<- *prometheus.Desc) {}

// Collect sums the targets' series.
func (p *profileSeries) Collect(ch chan<- prometheus.Metric) {
	type plainKey struct{ profile, gvk, series string }
	type labeledKey struct{ profile, gvk, series, names, values string }
	plain := map[plainKey]float64{}
	labeled := map[labeledKey]float64{}
	p.mu.Lock()
	for _, r := range p.by {
		for name, v := range r.Series.Values {
			plain[plainKey{r.Profile, r.GVK, name}] += v
		}
		for name, l := range r.Series.Labeled {
			names := strings.Join(LabelNames(l.Labels), "\x00")
			for _, t := range l.Tuples {
				labeled[labeledKey{r.Profile, r.GVK, name, names, strings.Join(t.Values, "\x00")}] += t.Sum
			}
		}
	}
	p.mu.Unlock()
	for k, v := range plain {
		ch <- prometheus.MustNewConstMetric(seriesDesc, prometheus.GaugeValue, v, k.profile, k.gvk, k.series)
	}
	descs := map[string]*prometheus.Desc{}
	for k, v := range labeled {
		d := descs[k.names]
		if d == nil {
			d = prometheus.NewDesc("kollect_custom_resource_labeled_series", labeledHelp,
				append([]string{"profile", "gvk", "series"}, strings.Split(k.names, "\x00")...), nil)
			descs[k.names] = d
		}
		m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, append([]string{k.profile, k.gvk, k.series}, strings.Split(k.values, "\x00")...)...)
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
}

var invalidLabel = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// LabelNames turns attribute names into Prometheus label names: invalid
// characters become '_', a leading digit or a reserved name (profile,
// gvk, series, __…) gets the prefix attr_, and names that come out the
// same get a numeric suffix.
func LabelNames(attrs []string) []string {
	out := make([]string, 0, len(attrs))
	for _, a := range attrs {
		n := invalidLabel.ReplaceAllString(a, "_")
		if n == "" || (n[0] >= '0' && n[0] <= '9') || n == "profile" || n == "gvk" || n == "series" || strings.HasPrefix(n, "__") {
			n = "attr_" + n
		}
		base := n
		for i := 2; slices.Contains(out, n); i++ {
			n = fmt.Sprintf("%s_%d", base, i)
		}
		out = append(out, n)
	}
	return out
}
