package git_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks/git"
)

// TestASplitExportIsOneCommitOfPartDocuments: an export split by the
// binding's size ceiling is one commit of part documents, which readers
// put back together; when the inventory fits again (even after a restart)
// the parts give way to the one document.
func TestASplitExportIsOneCommitOfPartDocuments(t *testing.T) {
	bare := remote(t)
	cfg := git.Config{URL: "file://" + bare, Layout: git.Layout{Format: "json"}}
	s, err := openSink(t, withMirror(cfg, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var rs []*rows.Row
	for i := range 30 {
		rs = append(rs, row(t, fmt.Sprintf("app-%02d", i), "registry.example/app:1"))
	}
	all := snap(rs...)
	parts, err := rows.Partition(all, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 3 {
		t.Fatalf("the test wants several parts, got %d", len(parts))
	}
	before := gitCmd(t, bare, "rev-list", "--count", "main")
	ack, err := s.ExportParts(ctx, all, parts)
	if err != nil {
		t.Fatal(err)
	}
	if got := gitCmd(t, bare, "rev-list", "--count", "main"); got != fmt.Sprint(atoi(before)+1) {
		t.Errorf("a split export made %s commits after %s, want one", got, before)
	}
	files := strings.Fields(gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main"))
	var names []string
	items := 0
	for i, p := range parts {
		name := fmt.Sprintf("inventory/default/demo-inventory.part-%04d-of-%04d.json", i+1, len(parts))
		names = append(names, name)
		doc := gitCmd(t, bare, "show", "main:"+name)
		if doc != string(p.Envelope("")) {
			t.Errorf("%s is not part %d's envelope", name, i+1)
		}
		if len(doc) > 2048 {
			t.Errorf("%s: %d bytes over the ceiling", name, len(doc))
		}
		var e struct{ PartIndex, PartTotal, ItemCount int }
		if err := json.Unmarshal([]byte(doc), &e); err != nil || e.PartIndex != i+1 || e.PartTotal != len(parts) {
			t.Errorf("%s: %+v %v", name, e, err)
		}
		items += e.ItemCount
	}
	if want := append([]string{"README.md"}, names...); strings.Join(files, ",") != strings.Join(want, ",") {
		t.Errorf("files %v, want %v", files, want)
	}
	if items != 30 || ack.Rows != 30 {
		t.Errorf("the parts hold %d rows, the sink acknowledged %d; want 30", items, ack.Rows)
	}
	// The same parts again: nothing to commit.
	if ack, err := s.ExportParts(ctx, all, parts); err != nil || ack.Changed {
		t.Errorf("an unchanged split export: changed %v, %v", ack.Changed, err)
	}

	// A restart, and the inventory fits in one document again: the part
	// files go, in the commit that writes it.
	restarted, err := openSink(t, withMirror(cfg, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	small := snap(rs[:3]...)
	if _, err := restarted.Export(ctx, small); err != nil {
		t.Fatal(err)
	}
	if files := gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main"); files != "README.md\ninventory/default/demo-inventory.json" {
		t.Fatalf("after fitting again, files:\n%s", files)
	}
}

func atoi(s string) int {
	n := 0
	_, _ = fmt.Sscan(s, &n)
	return n
}
