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

const pgScope = `FROM inventory_items WHERE inventory_namespace = 'default' AND inventory_name = 'load'`

func pgCount(ctx context.Context, db *pgx.Conn) (int, error) {
	var n int
	err := db.QueryRow(ctx, `SELECT count(*) `+pgScope).Scan(&n)
	return n, err
}

// pgVersions reads name → version of every row in Postgres.
func pgVersions(ctx context.Context, db *pgx.Conn) (map[string]string, error) {
	rs, err := db.Query(ctx, `SELECT payload->>'name', coalesce(payload->'attributes'->>'version', '') `+pgScope)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[string]string{}
	for rs.Next() {
		var name, version string
		if err := rs.Scan(&name, &version); err != nil {
			return nil, err
		}
		out[name] = version
	}
	return out, rs.Err()
}

// pgCompare counts objects whose row is missing or stale, and rows beyond
// one per object.
func pgCompare(ctx context.Context, db *pgx.Conn, want map[string]string) (lost, duplicated int) {
	got, err := pgVersions(ctx, db)
	if err != nil {
		return len(want), 0
	}
	n, _ := pgCount(ctx, db)
	for name, v := range want {
		if got[name] != v {
			lost++
		}
	}
	return lost, max(0, n-len(want)) + max(0, len(got)-len(want))
}

func gitFiles(bare string) ([]string, error) {
	out, err := exec.Command("git", "--git-dir", bare, "ls-tree", "-r", "--name-only", "main").Output()
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

func gitFileCount(bare string) (int, error) {
	f, err := gitFiles(bare)
	return len(f), err
}

// gitCompare counts objects whose file is missing or stale in the tip of
// main, reading every file with one git cat-file --batch.
func gitCompare(bare string, want map[string]string) int {
	files, err := gitFiles(bare)
	if err != nil {
		return len(want)
	}
	var in bytes.Buffer
	for _, f := range files {
		fmt.Fprintf(&in, "main:%s\n", f)
	}
	cmd := exec.Command("git", "--git-dir", bare, "cat-file", "--batch")
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		return len(want)
	}
	got := map[string]string{}
	r := bufio.NewReader(bytes.NewReader(out))
	for _, f := range files {
		header, err := r.ReadString('\n')
		if err != nil {
			break
		}
		var sha, typ string
		var size int
		fmt.Sscan(header, &sha, &typ, &size)
		body := make([]byte, size+1) // the content and its newline
		if _, err := io.ReadFull(r, body); err != nil {
			break
		}
		var attrs struct{ Version string }
		_ = yaml.Unmarshal(body[:size], &attrs)
		got[strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))] = attrs.Version
	}
	lost := 0
	for name, v := range want {
		if got[name] != v {
			lost++
		}
	}
	return lost + max(0, len(files)-len(want))
}
