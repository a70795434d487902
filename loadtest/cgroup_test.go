package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCgroupWrapEntersThenExecs: the wrapper writes its own PID into the
// cgroup's cgroup.procs and then execs the command, so the process started
// is the command's and every page it touches is charged to the cgroup.
// (A plain folder stands in for the cgroup.)
func TestCgroupWrapEntersThenExecs(t *testing.T) {
	dir := t.TempDir()
	c := &memoryCgroup{dir: dir}
	out := filepath.Join(dir, "ran")
	w := c.wrap()
	cmd := exec.Command(w[0], append(w[1:], "/bin/sh", "-c", `echo $$ > "$0"`, out)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	entered, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	ran, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the command did not run: %v", err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	if strings.TrimSpace(string(entered)) != pid || strings.TrimSpace(string(ran)) != pid {
		t.Fatalf("started %s; entered the cgroup as %q, ran as %q: the command must be the process that entered", pid, entered, ran)
	}
}

// TestCgroupStatsReadV1AndV2: the figures come from each version's files.
func TestCgroupStatsReadV1AndV2(t *testing.T) {
	for _, tc := range []struct {
		name  string
		v2    bool
		files map[string]string
		want  CgroupStats
		ws    int64
	}{
		{"v1", false, map[string]string{
			"memory.max_usage_in_bytes": "262144000\n", "memory.failcnt": "73806\n",
			"memory.oom_control":    "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
			"memory.usage_in_bytes": "200000000\n", "memory.stat": "cache 1000\npgmajfault 3\ntotal_inactive_file 50000000\ninactive_file 7\ntotal_pgmajfault 97000\n",
		}, CgroupStats{Limit: 9, Peak: 262144000, LimitHits: 73806, OOMKills: 1, MajorFaults: 97000}, 150000000},
		{"v2", true, map[string]string{
			"memory.peak": "262144000\n", "memory.events": "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n",
			"memory.current": "200000000\n", "memory.stat": "anon 1\ninactive_file 50000000\npgmajfault 5120\n",
		}, CgroupStats{Limit: 9, Peak: 262144000, LimitHits: 12, OOMKills: 1, MajorFaults: 5120}, 150000000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c := &memoryCgroup{dir: dir, v2: tc.v2, limit: 9}
			if got := c.stats(); got != tc.want {
				t.Fatalf("stats = %+v, want %+v", got, tc.want)
			}
			if got := c.workingSet(); got != tc.ws {
				t.Fatalf("working set = %d, want %d", got, tc.ws)
			}
		})
	}
}
