package manager

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestGOMEMLIMITWinsOverTheContainerLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "100MiB")
	before := debug.SetMemoryLimit(-1)
	if got := applyMemoryLimit(); got != 0 {
		t.Errorf("with GOMEMLIMIT set, applyMemoryLimit set %d", got)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("the limit moved from %d to %d", before, after)
	}
}

func TestContainerMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := filepath.Join(dir, "missing")
	cases := []struct {
		name  string
		files []string
		want  int64
	}{
		{"cgroup v2 limit", []string{file("v2", "536870912\n")}, 536870912},
		{"cgroup v2 without a limit", []string{file("max", "max\n")}, 0},
		{"cgroup v1 without a limit", []string{missing, file("v1", "9223372036854771712\n")}, 0},
		{"cgroup v1 limit after a missing v2 file", []string{missing, file("v1b", "268435456")}, 268435456},
		{"no cgroup files", []string{missing}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := containerMemoryLimit(tc.files); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSoftLimitIsNinetyPercentOfTheContainer(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "memory.max")
	if err := os.WriteFile(p, []byte("1000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := cgroupLimitFiles
	cgroupLimitFiles = []string{p}
	defer func() { cgroupLimitFiles = saved }()
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	if got := applyMemoryLimit(); got != 900000000 {
		t.Errorf("soft limit %d, want 900000000", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 900000000 {
		t.Errorf("the runtime limit is %d", got)
	}
}
