package manager

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// upstreamFlags are the manager flags upstream v0.19 documents.
var upstreamFlags = []string{"version", "metrics-bind-address", "metrics-secure", "metrics-cert-path", "metrics-cert-name", "metrics-cert-key",
	"health-probe-bind-address", "leader-elect", "leader-elect-lease-duration", "leader-elect-renew-deadline", "leader-elect-retry-period",
	"validating-webhooks-enabled", "webhook-cert-path", "webhook-cert-name", "webhook-cert-key", "enable-http2", "tenant-mode",
	"allow-private-sinks", "inventory-http-enabled", "inventory-http-port", "inventory-auth-mode", "inventory-auth-cache-ttl",
	"max-export-bytes", "max-concurrent-reconciles-target", "max-concurrent-reconciles-inventory",
	"max-concurrent-reconciles-cluster-target", "max-concurrent-reconciles-cluster-inventory", "reconcile-rate-limit",
	"target-count-resync", "enable-pprof", "pprof-bind-address", "watch-namespaces", "default-included-namespaces",
	"default-excluded-namespaces", "scrub-keys", "collect-dispatch-workers", "collect-dispatch-queue-size",
	"collect-dispatch-enqueue-wait", "informer-resync-period", "collect-metrics-sample-interval"}

// migrationTable reads the rows of the table under heading in a
// Markdown file: the backticked names of each row's first cell, mapped to
// its second cell.
func migrationTable(t *testing.T, file, heading string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no %q", file, heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	names := regexp.MustCompile("`([^`]+)`")
	out := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		for _, m := range names.FindAllStringSubmatch(cells[1], -1) {
			out[m[1]] = strings.TrimSpace(cells[2])
		}
	}
	return out
}

// docs/migrating.md lists every upstream flag; each exists here, and the
// table says "no effect" exactly for the flags that have none.
func TestMigratingListsEveryUpstreamFlag(t *testing.T) {
	rows := migrationTable(t, "../../docs/migrating.md", "## Manager flags")
	fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	new(Options).BindFlags(fs)
	fs.Bool("version", false, "") // the manager command's own (main.go; TestCommands runs it)
	for _, name := range upstreamFlags {
		if _, ok := rows["--"+name]; !ok {
			t.Errorf("docs/migrating.md does not list --%s", name)
		}
	}
	for flag, here := range rows {
		name := strings.TrimPrefix(flag, "--")
		if fs.Lookup(name) == nil {
			t.Errorf("docs/migrating.md lists %s, which the manager does not accept", flag)
			continue
		}
		_, none := noEffect[name]
		if says := strings.Contains(here, "no effect"); says != none {
			t.Errorf("%s: the table says %q, but the flag has an effect: %v", flag, here, !none)
		}
	}
}
