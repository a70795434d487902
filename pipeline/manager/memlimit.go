package manager

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// cgroupRootLimitFiles are where cgroup v2 and v1 expose the memory limit
// at the root of their mounts: a container's own cgroup in a container.
var cgroupRootLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// selfCgroupFile names the cgroups of this process.
var selfCgroupFile = "/proc/self/cgroup"

// limitFiles are the files that may hold this process's memory limit, in
// order: its own cgroup's, named by /proc/self/cgroup (selfCgroup), then
// the mounts' roots. Outside a container the roots are the machine's, and
// only the process's own cgroup holds its limit.
func limitFiles(selfCgroup string) []string {
	var files []string
	for line := range strings.Lines(selfCgroup) {
		// "0::/path" (v2) or "4:memory:/path" (v1); "/" is the root.
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 || f[2] == "/" || !strings.HasPrefix(f[2], "/") {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			files = append(files, filepath.Join("/sys/fs/cgroup", f[2], "memory.max"))
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			files = append(files, filepath.Join("/sys/fs/cgroup/memory", f[2], "memory.limit_in_bytes"))
		}
	}
	return append(files, cgroupRootLimitFiles...)
}

// containerMemoryLimit is the memory limit in the first readable file, or 0
// when there is none.
func containerMemoryLimit(files []string) int64 {
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 { // "max", or cgroup v1's "no limit"
			return 0
		}
		return n
	}
	return 0
}

// runReserve is room the soft limit leaves beside the operator's own pages
// (fileResident): the kernel's memory for the process and the page cache
// its Git mirrors work in.
const runReserve = 16 << 20

// softLimit is the Go runtime's soft memory limit in a container with
// limit, for a process whose executable has fileResident bytes of pages
// in memory: 90% of the limit, or less so that those pages, the reserve
// and the limit fit, but never less than half the limit.
//
// The container's limit counts the executable's pages too (text and
// read-only data: 80-90 MiB of a 178 MB binary are in memory once the
// manager starts). At a 250 MiB limit, 90% left the kernel 25 MiB for
// them: the 100k load test ran into the limit and read the operator's code
// back from disk 360,000 times in 18 minutes, in which the operator used
// 13 minutes of CPU and the API server, starved, created 75,000 of the
// objects. With this rule (150 MiB there) the same run completed
// (loadtest -memory-limit, docs/performance.md).
func softLimit(limit, fileResident int64) int64 {
	return max(limit/2, min(limit/10*9, limit-fileResident-runReserve))
}

// applyMemoryLimit gives the Go runtime a soft memory limit below the
// container's (softLimit), unless GOMEMLIMIT says otherwise: the garbage
// collector then works harder near the limit instead of letting the
// kernel kill the pod or evict the operator's code. It returns the limit
// set, or 0.
func applyMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	self, _ := os.ReadFile(selfCgroupFile)
	limit := containerMemoryLimit(limitFiles(string(self)))
	if limit == 0 {
		return 0
	}
	status, _ := os.ReadFile("/proc/self/status")
	soft := softLimit(limit, fileResident(string(status)))
	debug.SetMemoryLimit(soft)
	return soft
}

// fileResident reads RssFile (the process's file-backed pages in memory)
// from /proc/self/status, in bytes; 0 when it is not there.
func fileResident(status string) int64 {
	for line := range strings.Lines(status) {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
