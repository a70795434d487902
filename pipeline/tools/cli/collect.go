package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/collect"
	"kollect.dev/kollect/model/compile"
	"kollect.dev/kollect/model/rows"
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
	kubeconfig, namespace, output, sink, outputDir string
	contexts                                       []string
	allNamespaces, watch, dryRun                   bool
	files                                          []string
	// from: collect over these manifest files or folders instead of a
	// cluster.
	from []string
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
one export per target. With --output-dir each target's envelope is a file under that
folder, rewritten only when its rows change. --dry-run reports what either would write.
With --watch it keeps running and reports every change.

--context takes names or globs: every matching context is collected on its own, with
the context's name as the cluster of its rows (a sink's spec.cluster cannot be combined
with several contexts: every cluster's rows would carry the same name).

Exit codes: 0 every target collected, 1 some targets failed, 2 nothing collected or bad
input; with several contexts, the worst of theirs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCollect(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to the kubeconfig (default $KUBECONFIG, then ~/.kube/config).")
	f.StringSliceVar(&o.contexts, "context", nil, "Kubeconfig contexts: names or globs (* and ?), repeatable or comma-separated (default: the current one). Each is collected on its own, and its name is the {cluster} of its rows.")
	f.StringVarP(&o.namespace, "namespace", "n", "", "Collect only from this namespace.")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Collect from every namespace the targets select (the default).")
	f.StringSliceVarP(&o.files, "filename", "f", nil, "Profile and target manifests: files or folders (repeatable).")
	f.StringVarP(&o.output, "output", "o", "table", "Output format: table, wide, ndjson, json or yaml.")
	f.StringVar(&o.sink, "sink", "", "Write to the sink in this file (a KollectSnapshotSink, KollectDatabaseSink or KollectEventSink) instead of stdout; its secretRef resolves against Secret manifests in the -f files or this file, and a value ${env:VAR} is read from the environment.")
	f.StringVar(&o.outputDir, "output-dir", "", "Write each target's export envelope under this folder (the local sink): inventory/<namespace>/<name>.yaml, under <context>/ when several contexts are collected. A file whose rows are unchanged is left alone.")
	f.BoolVar(&o.dryRun, "dry-run", false, "Collect and report what --sink or --output-dir would be sent; write nothing and connect to no sink.")
	f.BoolVarP(&o.watch, "watch", "w", false, "After the first collection, keep watching and print (or export) every change until interrupted.")
	f.StringSliceVar(&o.from, "from", nil, "Collect over the objects in these manifest files or folders (a GitOps repository, rendered charts) instead of a cluster: the same selection, extraction and sinks, no kubeconfig. Objects without a namespace go to -n (default \"default\"); rows carry the cluster \"manifests\" unless a sink sets spec.cluster.")
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
	if err := o.check(); err != nil {
		return err
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
	contexts := []string{fromContext}
	if len(o.from) == 0 {
		raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{}).RawConfig()
		if err != nil {
			return fatal("kubeconfig: %v", err)
		}
		if contexts, err = matchContexts(raw, o.contexts); err != nil {
			return fatal("%v", err)
		}
	}
	several := len(contexts) > 1
	if several && o.watch {
		return fatal("--watch follows one context; --context matches %d (%s)", len(contexts), strings.Join(contexts, ", "))
	}
	var sink *sinkFile
	if o.sink != "" {
		if sink, err = loadSink(o.sink, cfg); err != nil {
			return fatal("%v", err)
		}
		if c := commonOf(sink.obj).Cluster; c != "" && several {
			return fatal("--sink %s sets spec.cluster %q and --context matches %d contexts: every context's rows would carry the same cluster; remove spec.cluster so each context's name is its cluster", o.sink, c, len(contexts))
		}
		if several && kindOf(sink.obj) == "KollectSnapshotSink" && !mentionsCluster(sink.obj) {
			return fatal("--sink %s: with several contexts its paths must contain {cluster} (spec.pathTemplate, or its layout's), or every context would write the same files", o.sink)
		}
	} else if len(cfg.Sinks) > 0 {
		fmt.Fprintf(stderr, "warning: %s %q in -f is not used; pass --sink FILE to write to it\n", kindOf(cfg.Sinks[0]), cfg.Sinks[0].GetName())
	}
	worst := 0
	var printed []record
	for _, name := range contexts {
		log := stderr
		if several {
			log = prefixed(stderr, name)
		}
		cluster := name
		if sink != nil {
			cluster = sink.cluster(name)
		}
		var res *contextRun
		if len(o.from) > 0 {
			res = o.collectFiles(ctx, cfg, name, cluster, log)
		} else {
			res = o.collectContext(ctx, cfg, loading, name, cluster, log)
		}
		if res.err == nil {
			switch {
			case sink != nil && o.watch:
				return o.watchSink(ctx, res, sink, stdout, stderr)
			case sink != nil:
				res.exportTo(ctx, sink, o.dryRun, stdout, log)
			case o.outputDir != "":
				res.writeTo(o.outputDir, several, o.dryRun, stdout, log)
			case o.watch:
				if err := printRecords(stdout, o.output, res.records); err != nil {
					return fatal("write output: %v", err)
				}
				if res.code() == 2 {
					return &ExitError{Code: 2, Err: res.summary()}
				}
				return res.c.watch(ctx, res.runs, watchOutput{w: stdout, format: o.output, context: name, stderr: stderr})
			default:
				printed = append(printed, res.records...)
			}
		}
		code := res.code()
		if code > 0 {
			fmt.Fprintf(log, "error: context %q: %v\n", name, res.summary())
		}
		worst = max(worst, code)
	}
	if sink == nil && o.outputDir == "" {
		if err := printRecords(stdout, o.output, printed); err != nil {
			return fatal("write output: %v", err)
		}
	}
	if worst > 0 {
		return &ExitError{Code: worst, Err: fmt.Errorf("%d context(s) collected, the worst ended with exit code %d", len(contexts), worst)}
	}
	return nil
}

// mentionsCluster reports whether a sink's spec uses {cluster} anywhere
// (a path template).
func mentionsCluster(o client.Object) bool {
	b, err := json.Marshal(o)
	return err == nil && strings.Contains(string(b), "{cluster}")
}

// check rejects flags that do not go together.
func (o collectOptions) check() error {
	switch o.output {
	case "table", "wide", "ndjson", "json", "yaml":
	default:
		return fatal("-o %q: use table, wide, ndjson, json or yaml", o.output)
	}
	if o.namespace != "" && o.allNamespaces {
		return fatal("-n and -A exclude each other")
	}
	if o.sink != "" && o.outputDir != "" {
		return fatal("--sink and --output-dir exclude each other: pick one destination")
	}
	if o.dryRun && o.sink == "" && o.outputDir == "" {
		return fatal("--dry-run needs --sink or --output-dir: without them nothing is written anyway")
	}
	if o.dryRun && o.watch {
		return fatal("--dry-run and --watch exclude each other")
	}
	if len(o.from) > 0 && (o.watch || len(o.contexts) > 0 || o.kubeconfig != "" || o.allNamespaces) {
		return fatal("--from reads manifests, not a cluster: it does not go with --watch, --context, --kubeconfig or -A")
	}
	return nil
}

type collector struct {
	dyn        dynamic.Interface
	resolver   *informers.Resolver
	stderr     io.Writer
	progress   *progress
	clock      clock.PassiveClock // stamps snapshots and watch lines
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

// snapshot is the target's rows as a snapshot taken at.
func (tr *targetRun) snapshot(at time.Time) *rows.Snapshot {
	out := make([]*rows.Row, 0, len(tr.rows))
	for _, r := range tr.rows {
		out = append(out, r)
	}
	return rows.NewSnapshot(rows.Identity{Namespace: tr.target.Namespace, Name: tr.target.Name}, out, at)
}

func (tr *targetRun) record(contextName, cluster string, at time.Time) record {
	snap := tr.snapshot(at)
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
				informers.StripBookkeeping(list.Items[i].Object)
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
