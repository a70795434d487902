package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryCgroup limits a process's memory as a pod's
// resources.limits.memory does: its anonymous memory and the page cache
// it brings in (its executable's pages, the files it writes) count
// against the limit; at the limit the kernel reclaims page cache, and
// kills the process when that is not enough.
type memoryCgroup struct {
	dir   string
	v2    bool
	limit int64
}

// CgroupStats are what a memory cgroup recorded over a run.
type CgroupStats struct {
	Limit int64 `json:"limitBytes"`
	// Peak is the most memory charged at once: anonymous memory and page
	// cache.
	Peak int64 `json:"peakBytes"`
	// PeakWorkingSet is the highest working set sampled (Sample.CgroupBytes).
	PeakWorkingSet int64 `json:"peakWorkingSetBytes"`
	// LimitHits counts the times a charge met the limit and the kernel
	// reclaimed memory to make room.
	LimitHits int64 `json:"limitHits"`
	OOMKills  int64 `json:"oomKills"`
	// MajorFaults counts the pages the cgroup's processes read back from
	// disk: under a tight limit, mostly the executable's code.
	MajorFaults int64 `json:"majorFaults"`
}

const (
	cgroupRoot   = "/sys/fs/cgroup"
	cgroupV1Root = "/sys/fs/cgroup/memory"
)

// newMemoryCgroup makes a memory cgroup called name with limit: under
// cgroup v2's root when it delegates the memory controller, otherwise in
// cgroup v1's memory hierarchy. It needs to be allowed to write there
// (root on a machine or VM).
func newMemoryCgroup(name string, limit int64) (*memoryCgroup, error) {
	c := &memoryCgroup{limit: limit}
	var limitFile string
	if b, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.subtree_control")); err == nil && slices.Contains(strings.Fields(string(b)), "memory") {
		c.dir, c.v2, limitFile = filepath.Join(cgroupRoot, name), true, "memory.max"
	} else if _, err := os.Stat(filepath.Join(cgroupV1Root, "memory.limit_in_bytes")); err == nil {
		c.dir, limitFile = filepath.Join(cgroupV1Root, name), "memory.limit_in_bytes"
	} else {
		return nil, fmt.Errorf("no memory cgroup to run the operator in: %s does not delegate the memory controller (cgroup v2) and %s is not mounted (cgroup v1)", cgroupRoot, cgroupV1Root)
	}
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		return nil, fmt.Errorf("memory cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		_ = c.remove()
		return nil, fmt.Errorf("memory cgroup limit: %w", err)
	}
	return c, nil
}

// wrap is a command that moves itself into the cgroup and then runs the
// command that follows it, so everything the process charges, from its
// first page on, counts against the limit.
func (c *memoryCgroup) wrap() []string {
	return []string{"/bin/sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, c.dir}
}

// workingSet is the memory charged now less the page cache the kernel
// would reclaim first (inactive files), as the kubelet counts a
// container's working set (kubectl top, evictions).
func (c *memoryCgroup) workingSet() int64 {
	if c.v2 {
		return readInt(filepath.Join(c.dir, "memory.current")) - readKeyed(filepath.Join(c.dir, "memory.stat"))["inactive_file"]
	}
	return readInt(filepath.Join(c.dir, "memory.usage_in_bytes")) - readKeyed(filepath.Join(c.dir, "memory.stat"))["total_inactive_file"]
}

// stats reads what the cgroup recorded.
func (c *memoryCgroup) stats() CgroupStats {
	s := CgroupStats{Limit: c.limit}
	if c.v2 {
		s.Peak = readInt(filepath.Join(c.dir, "memory.peak"))
		ev := readKeyed(filepath.Join(c.dir, "memory.events"))
		s.LimitHits, s.OOMKills = ev["max"], ev["oom_kill"]
		s.MajorFaults = readKeyed(filepath.Join(c.dir, "memory.stat"))["pgmajfault"]
		return s
	}
	s.Peak = readInt(filepath.Join(c.dir, "memory.max_usage_in_bytes"))
	s.LimitHits = readInt(filepath.Join(c.dir, "memory.failcnt"))
	s.OOMKills = readKeyed(filepath.Join(c.dir, "memory.oom_control"))["oom_kill"]
	s.MajorFaults = readKeyed(filepath.Join(c.dir, "memory.stat"))["total_pgmajfault"]
	return s
}

// remove deletes the cgroup once its processes are gone.
func (c *memoryCgroup) remove() error {
	var err error
	for range 50 {
		if err = os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("remove memory cgroup: %w", err)
}

// dropPageCache asks the kernel to drop a file's cached pages, so a
// process started from it brings them in again (and is charged for them,
// as a container starting from its image is). The file is synced first:
// the kernel does not drop pages still to be written (a binary just
// built).
func dropPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("drop the page cache of %s: %w", path, err)
	}
	return nil
}

func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// readKeyed reads a file of "key value" lines.
func readKeyed(path string) map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok {
			out[k], _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return out
}

// limitMemory makes the operator's memory cgroup for a run with limit (a
// Kubernetes quantity; empty: none, and no cgroup). It drops the page
// cache of the operator's binary, so the operator's cgroup is charged for
// the pages it runs from. The operator reads the limit from its cgroup and
// sets its own soft limit, as in a pod.
func limitMemory(limit, binary string) (*memoryCgroup, error) {
	if limit == "" {
		return nil, nil
	}
	q, err := resource.ParseQuantity(limit)
	if err != nil || q.Value() <= 0 {
		return nil, fmt.Errorf("memory limit %q: want a quantity such as 250Mi", limit)
	}
	if err := dropPageCache(binary); err != nil {
		return nil, err
	}
	return newMemoryCgroup(fmt.Sprintf("kollect-loadtest-%d", os.Getpid()), q.Value())
}
