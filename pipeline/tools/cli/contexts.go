package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"

	"kollect.dev/kollect/informers"
)

// matchContexts expands --context values (names or globs with * and ?)
// against the kubeconfig's contexts, in the kubeconfig's sorted order,
// each once. No value means the current context. A value that matches
// nothing is an error: a typo must not silently collect less.
func matchContexts(raw clientcmdapi.Config, patterns []string) ([]string, error) {
	if len(patterns) == 0 {
		if raw.CurrentContext == "" {
			return nil, fmt.Errorf("the kubeconfig has no current context: pass --context")
		}
		return []string{raw.CurrentContext}, nil
	}
	names := make([]string, 0, len(raw.Contexts))
	for n := range raw.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	seen := map[string]bool{}
	var out []string
	for _, p := range patterns {
		re, err := glob(p)
		if err != nil {
			return nil, fmt.Errorf("--context %q: %w", p, err)
		}
		matched := false
		for _, n := range names {
			if re.MatchString(n) {
				matched = true
				if !seen[n] {
					seen[n] = true
					out = append(out, n)
				}
			}
		}
		if !matched {
			return nil, fmt.Errorf("--context %q matches no context of the kubeconfig (it has: %s)", p, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// glob compiles a context pattern: * is any run of characters (slashes
// included: EKS context names are ARNs), ? one character.
func glob(p string) (*regexp.Regexp, error) {
	if p == "" {
		return nil, fmt.Errorf("empty context name")
	}
	q := regexp.QuoteMeta(p)
	q = strings.ReplaceAll(q, `\*`, `.*`)
	q = strings.ReplaceAll(q, `\?`, `.`)
	return regexp.Compile("^" + q + "$")
}

// contextRun is what one context's collection gave.
type contextRun struct {
	name, cluster string
	c             *collector
	runs          []*targetRun
	records       []record
	targets       int
	failed        int   // targets that failed to collect or export
	exported      int   // targets a sink or the folder acknowledged
	writes        bool  // the run sends to a sink or a folder
	err           error // fatal for the context: nothing collected
}

// code is the context's exit code: 2 nothing collected (or nothing
// written), 1 some targets failed, 0 all done.
func (r *contextRun) code() int {
	switch {
	case r.err != nil, len(r.records) == 0, r.writes && r.exported == 0:
		return 2
	case r.failed > 0:
		return 1
	}
	return 0
}

// summary says why a context did not end with 0.
func (r *contextRun) summary() error {
	switch {
	case r.err != nil:
		return r.err
	case len(r.records) == 0:
		return fmt.Errorf("no target collected")
	case r.writes && r.exported == 0:
		return fmt.Errorf("nothing exported")
	}
	return fmt.Errorf("%d of %d targets failed", r.failed, r.targets)
}

// collectContext lists every target's objects in one context with that
// context's credentials.
func (o collectOptions) collectContext(ctx context.Context, cfg *Config, loading *clientcmd.ClientConfigLoadingRules, name, cluster string, log io.Writer) *contextRun {
	res := &contextRun{name: name, cluster: cluster, targets: len(cfg.Targets)}
	kc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{CurrentContext: name})
	rc, err := kc.ClientConfig()
	if err != nil {
		res.err = fmt.Errorf("kubeconfig: %w", err)
		return res
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		res.err = fmt.Errorf("kubernetes client: %w", err)
		return res
	}
	disco, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		res.err = fmt.Errorf("kubernetes client: %w", err)
		return res
	}
	if _, err := disco.ServerVersion(); err != nil {
		res.err = fmt.Errorf("cannot reach the cluster of context %q: %w", name, err)
		return res
	}
	clk := clock.RealClock{}
	res.c = &collector{dyn: dyn, resolver: informers.NewResolver(disco), stderr: log, namespace: o.namespace, progress: newProgress(log, clk), clock: clk}
	res.collect(ctx, cfg, log)
	return res
}

// collect lists and evaluates every target of cfg with the run's
// collector.
func (r *contextRun) collect(ctx context.Context, cfg *Config, log io.Writer) {
	name, cluster := r.name, r.cluster
	if err := r.c.loadNamespaces(ctx); err != nil {
		r.err = err
		return
	}
	for i := range cfg.Targets {
		t := &cfg.Targets[i]
		tr, err := r.c.collectTarget(ctx, cfg, t)
		if err != nil {
			r.failed++
			fmt.Fprintf(log, "error: KollectTarget %s/%s: %v\n", t.Namespace, t.Name, err)
			continue
		}
		r.runs = append(r.runs, tr)
		r.records = append(r.records, tr.record(name, cluster, r.c.clock.Now()))
	}
}

// exportTo sends each target's snapshot to the sink (a backend of its
// own for this context's cluster), or with dryRun only says what it
// would send.
func (r *contextRun) exportTo(ctx context.Context, sf *sinkFile, dryRun bool, stdout, log io.Writer) {
	r.writes = true
	if dryRun {
		for _, rec := range r.records {
			fmt.Fprintf(stdout, "dry run: would export %s/%s (%d rows, cluster %q) to %s\n", rec.TargetNamespace, rec.TargetName, len(rec.snap.Rows), r.cluster, sf.name())
			r.exported++
		}
		return
	}
	out, err := sf.open(ctx, r.cluster)
	if err != nil {
		r.err = err
		return
	}
	defer out.close()
	r.export(ctx, out, stdout, log)
}

func (r *contextRun) export(ctx context.Context, out *sinkOutput, stdout, log io.Writer) {
	for _, rec := range r.records {
		if err := out.export(ctx, rec.snap); err != nil {
			fmt.Fprintf(log, "error: export %s/%s to %s: %v\n", rec.TargetNamespace, rec.TargetName, out.name, err)
			r.failed++
			continue
		}
		r.exported++
	}
	fmt.Fprintf(stdout, "exported %d target(s) to %s (context %s)\n", r.exported, out.name, r.name)
}

// watchSink exports once, then follows the context's changes into the
// sink until ctx ends.
func (o collectOptions) watchSink(ctx context.Context, r *contextRun, sf *sinkFile, stdout, stderr io.Writer) error {
	out, err := sf.open(ctx, r.cluster)
	if err != nil {
		return fatal("%v", err)
	}
	defer out.close()
	r.writes = true
	r.export(ctx, out, stdout, stderr)
	if r.code() == 2 {
		return &ExitError{Code: 2, Err: r.summary()}
	}
	return r.c.watch(ctx, r.runs, watchOutput{w: stdout, format: o.output, context: r.name, sink: out, stderr: stderr})
}

// prefixed writes each line with "[context] " before it, so the messages
// of several contexts stay apart.
type prefixWriter struct {
	w      io.Writer
	prefix []byte
	midway bool
}

func prefixed(w io.Writer, name string) io.Writer {
	return &prefixWriter{w: w, prefix: []byte("[" + name + "] ")}
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var buf bytes.Buffer
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if !p.midway {
			buf.Write(p.prefix)
		}
		buf.Write(line)
		p.midway = line[len(line)-1] != '\n'
	}
	if _, err := p.w.Write(buf.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}
