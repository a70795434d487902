package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScenariosLoadAndAReportIsWritten: every shipped scenario parses, and
// a short engine run writes a JSON report that reads back, the Markdown
// table and the plots.
func TestScenariosLoadAndAReportIsWritten(t *testing.T) {
	files, _ := filepath.Glob("scenarios/*.yaml")
	if len(files) < 4 {
		t.Fatalf("scenarios: %v", files)
	}
	for _, f := range files {
		if _, err := LoadScenario(f); err != nil {
			t.Error(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Scenario{Name: "tiny", Mode: "engine", Objects: 500, ChurnRate: 1000, ChurnFor: Duration{500 * time.Millisecond},
		SinkDelay: Duration{20 * time.Millisecond}}, "", "", nil, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	written, err := rep.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range written {
		names[filepath.Base(f)] = true
	}
	if !names["report.json"] || !names["report.md"] || !names["mailbox.png"] || !names["rss.png"] {
		t.Fatalf("files written: %v", written)
	}
	var back Report
	raw, _ := os.ReadFile(written[0])
	if err := json.Unmarshal(raw, &back); err != nil || back.Engine == nil || back.Engine.SinkRows != 500 || back.Engine.Lost != 0 {
		t.Fatalf("report.json: %v %+v", err, back.Engine)
	}
	md, _ := os.ReadFile(written[1])
	if !strings.Contains(string(md), "| engine: rows lost / duplicated | 0 / 0 |") {
		t.Fatalf("report.md:\n%s", md)
	}
}
