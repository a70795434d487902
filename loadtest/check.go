package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"sigs.k8s.io/yaml"
)

const pgScope = `FROM inventory_items WHERE inventory_namespace = '` + pipelineNamespace + `' AND inventory_name = 'load'`

func pgCount(ctx context.Context, db *pgx.Conn) (int, error) {
	var n int
	err := db.QueryRow(ctx, `SELECT count(*) `+pgScope).Scan(&n)
	return n, err
}

// pgVersions reads name → version of every row in Postgres, and how many
// rows there are (more than names when an object has two rows).
func pgVersions(ctx context.Context, db *pgx.Conn) (map[string]string, int, error) {
	rs, err := db.Query(ctx, `SELECT payload->>'name', coalesce(payload->'attributes'->>'version', '') `+pgScope)
	if err != nil {
		return nil, 0, err
	}
	defer rs.Close()
	out, n := map[string]string{}, 0
	for rs.Next() {
		var name, version string
		if err := rs.Scan(&name, &version); err != nil {
			return nil, 0, err
		}
		out[name] = version
		n++
	}
	return out, n, rs.Err()
}

// pgCompare counts objects whose row is missing or stale, and rows that
// are not one per object (a second row for an object, or a row for none).
func pgCompare(ctx context.Context, db *pgx.Conn, want map[string]string) (lost, duplicated int) {
	got, n, err := pgVersions(ctx, db)
	if err != nil {
		return len(want), 0
	}
	for name, v := range want {
		if got[name] != v {
			lost++
		}
	}
	extra := 0
	for name := range got {
		if _, ok := want[name]; !ok {
			extra++
		}
	}
	return lost, n - len(got) + extra
}

func gitFiles(bare string) ([]string, error) { return gitFilesAt(bare, "main") }

// gitFilesAt lists the files of commit rev.
func gitFilesAt(bare, rev string) ([]string, error) {
	out, err := exec.Command("git", "--git-dir", bare, "ls-tree", "-r", "--name-only", rev).Output()
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// gitCompare counts objects whose file is missing or stale in the tip of
// main, and files no object has.
func gitCompare(bare string, want map[string]string) int {
	byPath, err := gitVersions(bare)
	if err != nil {
		return len(want)
	}
	got := map[string]string{}
	for f, v := range byPath {
		got[objectName(f)] = v
	}
	lost := 0
	for name, v := range want {
		if got[name] != v {
			lost++
		}
	}
	return lost + max(0, len(byPath)-len(want))
}

// gitVersions reads the version attribute of every file at the tip of main
// (path → version), with one git cat-file --batch.
func gitVersions(bare string) (map[string]string, error) { return gitVersionsAt(bare, "main") }

// gitVersionsAt reads the version attribute of every file of commit rev.
func gitVersionsAt(bare, rev string) (map[string]string, error) {
	files, err := gitFilesAt(bare, rev)
	if err != nil {
		return nil, err
	}
	var in bytes.Buffer
	for _, f := range files {
		fmt.Fprintf(&in, "%s:%s\n", rev, f)
	}
	cmd := exec.Command("git", "--git-dir", bare, "cat-file", "--batch")
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	got := make(map[string]string, len(files))
	r := bufio.NewReader(bytes.NewReader(out))
	for _, f := range files {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("git cat-file: %w", err)
		}
		var sha, typ string
		var size int
		if _, err := fmt.Sscan(header, &sha, &typ, &size); err != nil {
			return nil, fmt.Errorf("git cat-file %q: %w", header, err)
		}
		body := make([]byte, size+1) // the content and its newline
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, fmt.Errorf("git cat-file: %w", err)
		}
		var attrs struct{ Version string }
		_ = yaml.Unmarshal(body[:size], &attrs)
		got[f] = attrs.Version
	}
	return got, nil
}

// objectName is the object a Git file holds: its name without directory
// and extension (the scenarios' ItemPath).
func objectName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}
