package manager

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupLimitFiles are where cgroup v2 and v1 expose the memory limit.
var cgroupLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

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

// applyMemoryLimit gives the Go runtime a soft memory limit at 90% of the
// container's, unless GOMEMLIMIT says otherwise: the garbage collector then
// works harder near the limit instead of letting the kernel kill the pod.
// It returns the limit set, or 0.
func applyMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit := containerMemoryLimit(cgroupLimitFiles)
	if limit == 0 {
		return 0
	}
	soft := limit / 10 * 9
	debug.SetMemoryLimit(soft)
	return soft
}
