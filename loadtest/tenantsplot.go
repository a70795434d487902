package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// tenantsPanel is one panel of the figures-against-N plot: a y axis and the
// figures drawn on it.
type tenantsPanel struct {
	title, unit string
	lines       []tenantsLine
}

type tenantsLine struct {
	name string
	of   func(*TenantsResult) float64
}

// tenantsPanels are the figures issue-sized runs report, against the
// number of teams: each should grow with what the teams own (their rows),
// not with the number of teams times anything.
var tenantsPanels = []tenantsPanel{
	{"Time until every binding acknowledged", "seconds", []tenantsLine{
		{"first sync (every row in every sink)", func(t *TenantsResult) float64 { return t.AllSynced.Seconds() }},
		{"after a restart", func(t *TenantsResult) float64 { return t.RestartAcked.Seconds() }},
	}},
	{"Operator", "MiB; CPU seconds", []tenantsLine{
		{"peak RSS (MiB)", func(t *TenantsResult) float64 { return float64(t.PeakRSS) / (1 << 20) }},
		{"CPU, whole run (s)", func(t *TenantsResult) float64 { return t.CPUSeconds }},
	}},
	{"API requests after a restart", "requests", []tenantsLine{
		{"Secret reads", func(t *TenantsResult) float64 { return t.SecretReads[2] }},
		{"inventory status patches", func(t *TenantsResult) float64 { return restartRequests(t, "PATCH kollectinventories/status") }},
		{"target status patches", func(t *TenantsResult) float64 { return restartRequests(t, "PATCH kollecttargets/status") }},
	}},
	{"Shared servers and metrics", "count", []tenantsLine{
		{"PostgreSQL connections (peak)", func(t *TenantsResult) float64 { return float64(max(t.PostgresConns, t.PostgresConnsRestart)) }},
		{"Git mirrors", func(t *TenantsResult) float64 { return float64(t.GitMirrors) }},
		{"Kafka topic reads after a restart", func(t *TenantsResult) float64 { return float64(t.TopicBytesRead) / float64(max(t.TopicBytes, 1)) }},
		{"/metrics series ÷ 100", func(t *TenantsResult) float64 { return float64(t.Series) / 100 }},
	}},
}

func restartRequests(t *TenantsResult, request string) float64 {
	for _, r := range t.RestartRequests {
		if r.Request == request {
			return r.Count
		}
	}
	return 0
}

// plotTenants draws the figures of tenants runs (their report.json files)
// against the number of teams, as one PNG of four panels.
func plotTenants(out string, reports []string) error {
	var runs []*TenantsResult
	for _, path := range reports {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var r Report
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if r.Tenants == nil {
			return fmt.Errorf("%s is not the report of a tenants run", path)
		}
		runs = append(runs, r.Tenants)
	}
	if len(runs) < 2 {
		return fmt.Errorf("a plot against the number of teams needs two runs or more, got %d", len(runs))
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Tenants < runs[j].Tenants })
	plots := make([][]*plot.Plot, 2)
	for i, panel := range tenantsPanels {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = panel.title, "teams", panel.unit
		var lines []any
		for _, l := range panel.lines {
			xys := make(plotter.XYs, len(runs))
			for k, run := range runs {
				xys[k].X, xys[k].Y = float64(run.Tenants), l.of(run)
			}
			lines = append(lines, l.name, xys)
		}
		if err := plotutil.AddLinePoints(p, lines...); err != nil {
			return err
		}
		p.Legend.Top, p.Legend.Left = true, true
		p.X.Min, p.Y.Min = 0, 0
		plots[i/2] = append(plots[i/2], p)
	}
	img := vgimg.New(12*vg.Inch, 8*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for r := range plots {
		for c := range plots[r] {
			plots[r][c].Draw(canvases[r][c])
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", out, err)
	}
	return f.Close()
}
