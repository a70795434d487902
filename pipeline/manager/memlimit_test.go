package manager

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
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

func TestSoftLimitLeavesRoomForTheExecutable(t *testing.T) {
	const mi = 1 << 20
	for _, tc := range []struct {
		name                string
		limit, fileResident int64
		want                int64
	}{
		{"a large limit: 90%", 4096 * mi, 84 * mi, 4096 * mi / 10 * 9},
		{"the chart's default: room for the executable", 512 * mi, 84 * mi, 412 * mi},
		{"250 MiB: what the 100k load test ran in", 250 * mi, 84 * mi, 150 * mi},
		{"a small limit: half, at least", 128 * mi, 84 * mi, 64 * mi},
		{"nothing known of the executable: 90%", 1000000000, 0, 900000000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := softLimit(tc.limit, tc.fileResident); got != tc.want {
				t.Errorf("softLimit(%d MiB, %d MiB) = %.1f MiB, want %.1f MiB", tc.limit/mi, tc.fileResident/mi, float64(got)/mi, float64(tc.want)/mi)
			}
		})
	}
}

func TestLimitFilesStartWithTheProcesssOwnCgroup(t *testing.T) {
	for _, tc := range []struct {
		name, self string
		want       []string
	}{
		{"cgroup v2", "0::/kubepods/pod1/c1\n", []string{"/sys/fs/cgroup/kubepods/pod1/c1/memory.max"}},
		{"cgroup v1", "5:cpu,cpuacct:/x\n4:memory:/kollect-loadtest-7\n0::/\n", []string{"/sys/fs/cgroup/memory/kollect-loadtest-7/memory.limit_in_bytes"}},
		{"a container's own namespace: the roots", "0::/\n", nil},
		{"nothing readable", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := slices.Concat(tc.want, cgroupRootLimitFiles)
			if got := limitFiles(strings.ReplaceAll(tc.self, `\n`, "\n")); !slices.Equal(got, want) {
				t.Errorf("limitFiles = %q, want %q", got, want)
			}
		})
	}
}

func TestFileResident(t *testing.T) {
	status := "Name:\tkollect\nVmRSS:\t  309000 kB\nRssAnon:\t  222000 kB\nRssFile:\t   86016 kB\nRssShmem:\t 0 kB\n"
	if got := fileResident(status); got != 86016<<10 {
		t.Errorf("fileResident = %d, want %d", got, 86016<<10)
	}
	if got := fileResident("Name:\tx\n"); got != 0 {
		t.Errorf("without RssFile: %d", got)
	}
}

func TestApplyMemoryLimitSetsTheRuntimesLimit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "memory.max")
	if err := os.WriteFile(p, []byte("4000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	saved, savedSelf := cgroupRootLimitFiles, selfCgroupFile
	cgroupRootLimitFiles, selfCgroupFile = []string{p}, filepath.Join(dir, "missing")
	defer func() { cgroupRootLimitFiles, selfCgroupFile = saved, savedSelf }()
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	got := applyMemoryLimit()
	if got <= 2000000000 || got > 3600000000 {
		t.Errorf("soft limit %d for a 4 GB container, want at most 90%% and at least half", got)
	}
	if rt := debug.SetMemoryLimit(-1); rt != got {
		t.Errorf("the runtime limit is %d, applyMemoryLimit said %d", rt, got)
	}
}
