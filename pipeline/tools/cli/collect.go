package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/pipeline/compile"
	"kollect.dev/kollect/pipeline/model/collect"
	"kollect.dev/kollect/pipeline/model/rows"
)

// ExitError carries the exit code of a command: 1 partial, 2 fatal.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

func fatal(format string, a ...any) error { return &ExitError{Code: 2, Err: fmt.Errorf(format, a...)} }

type collectOptions struct {
	kubeconfig, context, namespace, output, sink string
	allNamespaces, watch                         bool
	files                                        []string
}

// NewCollectCommand builds `kollect collect`.
func NewCollectCommand() *cobra.Command {
	var o collectOptions
	cmd := &cobra.Command{
		Use:   "collect -f FILE|DIR [-o ndjson|json|yaml|table|wide]",
		Short: "Collect once with a kubeconfig, as the operator would, and print the rows",
		Long: `collect reads KollectProfile and KollectTarget manifests (-f, files or folders),
lists the selected objects with your kubeconfig and prints what the operator would export.
No operator and no CRDs are needed in the cluster.

With --sink the rows go to the sink in that file instead of stdout: any sink type the
operator supports (Git, PostgreSQL, NATS, Kafka, ...), built by the same registry, with
one export per target. With --watch it keeps running and reports every change.

Exit codes: 0 every target collected, 1 some targets failed, 2 nothing collected or bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCollect(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to the kubeconfig (default $KUBECONFIG, then ~/.kube/config).")
	f.StringVar(&o.context, "context", "", "Kubeconfig context to use (default: the current one).")
	f.StringVarP(&o.namespace, "namespace", "n", "", "Collect only from this namespace.")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Collect from every namespace the targets select (the default).")
	f.StringSliceVarP(&o.files, "filename", "f", nil, "Profile and target manifests: files or folders (repeatable).")
	f.StringVarP(&o.output, "output", "o", "table", "Output format: table, wide, ndjson, json or yaml.")
	f.StringVar(&o.sink, "sink", "", "Write to the sink in this file (a KollectSnapshotSink, KollectDatabaseSink or KollectEventSink) instead of stdout; its secretRef resolves against Secret manifests in the -f files or this file, and a value ${env:VAR} is read from the environment.")
	f.BoolVarP(&o.watch, "watch", "w", false, "After the first collection, keep watching and print (or export) every change until interrupted.")
	return cmd
}

// record is one target's result, as the upstream pipeline CLI prints it.
type record struct {
	Context         string          `json:"context"`
	TargetNamespace string          `json:"targetNamespace"`
	TargetName      string          `json:"targetName"`
	Path            string          `json:"path"`
	Envelope        json.RawMessage `json:"envelope"`
	snap            *rows.Snapshot
}

func runCollect(ctx context.Context, o collectOptions, stdout, stderr io.Writer) error {
	switch o.output {
	case "table", "wide", "ndjson", "json", "yaml":
	default:
		return fatal("-o %q: use table, wide, ndjson, json or yaml", o.output)
	}
	if o.namespace != "" && o.allNamespaces {
		return fatal("-n and -A exclude each other")
	}
	cfg, err := Load(o.files)
	if err != nil {
		return fatal("%v", err)
	}
	for _, s := range cfg.Skipped {
		fmt.Fprintf(stderr, "warning: %s: not a profile or target, skipped\n", s)
	}
	if len(cfg.Targets) == 0 {
		return fatal("no KollectTarget in %s", strings.Join(o.files, ", "))
	}
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.kubeconfig != "" {
		loading.ExplicitPath = o.kubeconfig
	}
	kc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{CurrentContext: o.context})
	raw, err := kc.RawConfig()
	if err != nil {
		return fatal("kubeconfig: %v", err)
	}
	contextName := o.context
	if contextName == "" {
		contextName = raw.CurrentContext
	}
	rc, err := kc.ClientConfig()
	if err != nil {
		return fatal("kubeconfig: %v", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fatal("kubernetes client: %v", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return fatal("kubernetes client: %v", err)
	}
	if _, err := disco.ServerVersion(); err != nil {
		return fatal("cannot reach the cluster of context %q: %v", contextName, err)
	}
	var out *sinkOutput
	if o.sink != "" {
		if out, err = openSink(o.sink, cfg); err != nil {
			return fatal("%v", err)
		}
		defer out.close()
	} else if len(cfg.Sinks) > 0 {
		fmt.Fprintf(stderr, "warning: %s %q in -f is not used; pass --sink FILE to write to it\n", kindOf(cfg.Sinks[0]), cfg.Sinks[0].GetName())
	}
	c := &collector{dyn: dyn, resolver: informers.NewResolver(disco), stderr: stderr, namespace: o.namespace,
		progress: newProgress(stderr)}
	if err := c.loadNamespaces(ctx); err != nil {
		return fatal("%v", err)
	}

	var runs []*targetRun
	failed := 0
	for i := range cfg.Targets {
		t := &cfg.Targets[i]
		tr, err := c.collectTarget(ctx, cfg, t)
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "error: KollectTarget %s/%s: %v\n", t.Namespace, t.Name, err)
			continue
		}
		runs = append(runs, tr)
	}
	cluster := ""
	if out != nil {
		cluster = out.cluster
	}
	records := make([]record, 0, len(runs))
	for _, tr := range runs {
		records = append(records, tr.record(contextName, cluster))
	}
	if out != nil {
		exported := 0
		for _, rec := range records {
			if err := out.export(ctx, rec.snap); err != nil {
				fmt.Fprintf(stderr, "error: export %s/%s to %s: %v\n", rec.TargetNamespace, rec.TargetName, out.name, err)
				failed++
				continue
			}
			exported++
		}
		fmt.Fprintf(stdout, "exported %d target(s) to %s\n", exported, out.name)
		if exported == 0 && len(records) > 0 {
			return &ExitError{Code: 2, Err: fmt.Errorf("nothing exported to %s", out.name)}
		}
	} else if err := print(stdout, o.output, records); err != nil {
		return fatal("write output: %v", err)
	}
	if len(records) == 0 {
		return &ExitError{Code: 2, Err: fmt.Errorf("no target collected")}
	}
	if o.watch {
		return c.watch(ctx, runs, watchOutput{w: stdout, format: o.output, context: contextName, sink: out, stderr: stderr})
	}
	if failed > 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("%d of %d targets failed", failed, len(cfg.Targets))}
	}
	return nil
}

type collector struct {
	dyn        dynamic.Interface
	resolver   *informers.Resolver
	stderr     io.Writer
	progress   *progress
	namespace  string
	namespaces map[string]*unstructured.Unstructured
}

func (c *collector) namespaceOf(name string) *unstructured.Unstructured { return c.namespaces[name] }

func (c *collector) loadNamespaces(ctx context.Context) error {
	list, err := c.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	c.namespaces = map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		c.namespaces[list.Items[i].GetName()] = &list.Items[i]
	}
	return nil
}

// targetRun is one target being collected: its compiled evaluator, the
// kinds it lists and the rows it holds.
type targetRun struct {
	target *kollectv1alpha1.KollectTarget
	ev     *collect.Evaluator
	kinds  []listedKind
	rows   map[rows.Key]*rows.Row
}

type listedKind struct {
	gvk        schema.GroupVersionKind
	gvr        schema.GroupVersionResource
	namespaced bool
}

func (tr *targetRun) snapshot() *rows.Snapshot {
	out := make([]*rows.Row, 0, len(tr.rows))
	for _, r := range tr.rows {
		out = append(out, r)
	}
	return rows.NewSnapshot(rows.Identity{Namespace: tr.target.Namespace, Name: tr.target.Name}, out, time.Now())
}

func (tr *targetRun) record(contextName, cluster string) record {
	snap := tr.snapshot()
	if cluster == "" {
		cluster = contextName
	}
	return record{Context: contextName, TargetNamespace: tr.target.Namespace, TargetName: tr.target.Name,
		Path: fmt.Sprintf("inventory/%s/%s.yaml", tr.target.Namespace, tr.target.Name), Envelope: snap.Envelope(cluster), snap: snap}
}

// listPage is how many objects one list request returns; progress is
// reported per page.
const listPage = 500

func (c *collector) collectTarget(ctx context.Context, cfg *Config, t *kollectv1alpha1.KollectTarget) (*targetRun, error) {
	p := cfg.Profile(t)
	if p == nil {
		return nil, fmt.Errorf("profileRef %q: no KollectProfile of that name in the files", t.Spec.ProfileRef)
	}
	compiled, err := compile.Compile(t, p, compile.Defaults{})
	if err != nil {
		return nil, err
	}
	tr := &targetRun{target: t, rows: map[rows.Key]*rows.Row{}, ev: &collect.Evaluator{TargetNamespace: t.Namespace, TargetName: t.Name,
		ProfileGVK: compiled.GVK, Selection: compiled.Selection, Extractor: compiled.Extractor}}
	for _, gvk := range compiled.Selection.GVKs(compiled.GVK) {
		gvr, namespaced, err := c.resolver.Resolve(gvk)
		if err != nil {
			return nil, err
		}
		tr.kinds = append(tr.kinds, listedKind{gvk: gvk, gvr: gvr, namespaced: namespaced})
		res := c.dyn.Resource(gvr)
		var lister dynamic.ResourceInterface = res
		if c.namespace != "" && namespaced {
			lister = res.Namespace(c.namespace)
		}
		seen, kept := 0, 0
		for cont := ""; ; {
			list, err := lister.List(ctx, metav1.ListOptions{Limit: listPage, Continue: cont})
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", gvr.Resource, err)
			}
			for i := range list.Items {
				row, err := tr.ev.Row(gvk, &list.Items[i], c.namespaceOf)
				if err != nil {
					fmt.Fprintf(c.stderr, "warning: %s %s/%s: %v\n", gvk.Kind, list.Items[i].GetNamespace(), list.Items[i].GetName(), err)
					continue
				}
				if row != nil {
					tr.rows[row.Key()] = row
					kept++
				}
			}
			seen += len(list.Items)
			c.progress.update(fmt.Sprintf("%s/%s: %d of %d %s selected", t.Namespace, t.Name, kept, seen, gvr.Resource))
			if cont = list.GetContinue(); cont == "" {
				break
			}
		}
		c.progress.done(fmt.Sprintf("collected %d of %d %s for %s/%s", kept, seen, gvr.Resource, t.Namespace, t.Name))
	}
	return tr, nil
}

func print(w io.Writer, format string, records []record) error {
	switch format {
	case "ndjson":
		for _, r := range records {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
				return err
			}
		}
		return nil
	case "json", "yaml":
		if records == nil {
			records = []record{}
		}
		b, err := json.MarshalIndent(records, "", "  ")
		if err != nil {
			return err
		}
		if format == "yaml" {
			if b, err = yaml.JSONToYAML(b); err != nil {
				return err
			}
		} else {
			b = append(b, '\n')
		}
		_, err = w.Write(b)
		return err
	}
	return table(w, records, format == "wide")
}

// table prints one line per row with the attributes as columns.
func table(w io.Writer, records []record, wide bool) error {
	names := map[string]bool{}
	for _, r := range records {
		for _, row := range r.snap.Rows {
			for k := range row.Attributes {
				names[k] = true
			}
		}
	}
	cols := make([]string, 0, len(names))
	for k := range names {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := []string{"TARGET", "NAMESPACE", "NAME", "KIND"}
	for _, c := range cols {
		header = append(header, strings.ToUpper(c))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range records {
		for _, row := range r.snap.Rows {
			line := []string{r.TargetNamespace + "/" + r.TargetName, row.Namespace, row.Name, row.Kind}
			for _, c := range cols {
				line = append(line, cell(row.Attributes[c], row.Attributes, c, wide))
			}
			fmt.Fprintln(tw, strings.Join(line, "\t"))
		}
	}
	return tw.Flush()
}

func cell(v any, attrs map[string]any, key string, wide bool) string {
	if _, ok := attrs[key]; !ok {
		return "<none>"
	}
	var s string
	switch v := v.(type) {
	case string:
		s = v
	default:
		b, _ := json.Marshal(v)
		s = string(b)
	}
	if !wide && len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}
