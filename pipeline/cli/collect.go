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
	"kollect.dev/kollect/pipeline/collect"
	"kollect.dev/kollect/pipeline/controllers/target"
	"kollect.dev/kollect/pipeline/rows"
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
	kubeconfig, context, namespace, output string
	allNamespaces                          bool
	files                                  []string
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
	c := &collector{dyn: dyn, resolver: informers.NewResolver(disco), stderr: stderr, namespace: o.namespace}
	if err := c.loadNamespaces(ctx); err != nil {
		return fatal("%v", err)
	}

	var records []record
	failed := 0
	for i := range cfg.Targets {
		t := &cfg.Targets[i]
		rec, err := c.collectTarget(ctx, cfg, t, contextName)
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "error: KollectTarget %s/%s: %v\n", t.Namespace, t.Name, err)
			continue
		}
		records = append(records, *rec)
	}
	if err := print(stdout, o.output, records); err != nil {
		return fatal("write output: %v", err)
	}
	switch {
	case len(records) == 0:
		return &ExitError{Code: 2, Err: fmt.Errorf("no target collected")}
	case failed > 0:
		return &ExitError{Code: 1, Err: fmt.Errorf("%d of %d targets failed", failed, len(cfg.Targets))}
	}
	return nil
}

type collector struct {
	dyn        dynamic.Interface
	resolver   *informers.Resolver
	stderr     io.Writer
	namespace  string
	namespaces map[string]*unstructured.Unstructured
}

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

func (c *collector) collectTarget(ctx context.Context, cfg *Config, t *kollectv1alpha1.KollectTarget, contextName string) (*record, error) {
	p := cfg.Profile(t)
	if p == nil {
		return nil, fmt.Errorf("profileRef %q: no KollectProfile of that name in the files", t.Spec.ProfileRef)
	}
	compiled, err := target.Compile(t, p, target.Defaults{})
	if err != nil {
		return nil, err
	}
	ev := &collect.Evaluator{TargetNamespace: t.Namespace, TargetName: t.Name, ProfileGVK: compiled.GVK,
		Selection: compiled.Selection, Extractor: compiled.Extractor}
	var out []*rows.Row
	failures := 0
	for _, gvk := range compiled.Selection.GVKs(compiled.GVK) {
		gvr, namespaced, err := c.resolver.Resolve(gvk)
		if err != nil {
			return nil, err
		}
		res := c.dyn.Resource(gvr)
		var list *unstructured.UnstructuredList
		if c.namespace != "" && namespaced {
			list, err = res.Namespace(c.namespace).List(ctx, metav1.ListOptions{})
		} else {
			list, err = res.List(ctx, metav1.ListOptions{})
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", gvr.Resource, err)
		}
		for i := range list.Items {
			row, err := ev.Row(gvk, &list.Items[i], func(n string) *unstructured.Unstructured { return c.namespaces[n] })
			if err != nil {
				failures++
				fmt.Fprintf(c.stderr, "warning: %s %s/%s: %v\n", gvk.Kind, list.Items[i].GetNamespace(), list.Items[i].GetName(), err)
				continue
			}
			if row != nil {
				out = append(out, row)
			}
		}
		fmt.Fprintf(c.stderr, "collected %d of %d %s for %s/%s\n", len(out), len(list.Items), gvr.Resource, t.Namespace, t.Name)
	}
	snap := rows.NewSnapshot(rows.Identity{Namespace: t.Namespace, Name: t.Name}, out, time.Now())
	return &record{Context: contextName, TargetNamespace: t.Namespace, TargetName: t.Name,
		Path: fmt.Sprintf("inventory/%s/%s.yaml", t.Namespace, t.Name), Envelope: snap.Envelope(contextName), snap: snap}, nil
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
