package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/charmbracelet/huh"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/compile"
)

// InitOptions configure `kollect init`. In and Out are the terminal the
// wizard draws on.
type InitOptions struct {
	Kubeconfig, Context, OutputDir string
	In, Out                        *os.File
}

// NewInitCommand builds `kollect init`.
func NewInitCommand() *cobra.Command {
	o := InitOptions{OutputDir: "collect-config"}
	cmd := &cobra.Command{
		Use:   "init [--output-dir DIR]",
		Short: "Inspect the cluster and write a profile and a target, interactively",
		Long: `init asks which kind to collect (from the cluster's discovery), samples a few
objects of it, lets you pick attributes from what they hold, and writes profile.yaml
and target.yaml into --output-dir for kollect collect -f DIR (or kubectl apply).

Secrets are sampled only after an explicit confirmation; the profile then carries the
kollect.dev/allow-secret-extraction annotation the operator requires. Needs a terminal.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.In, o.Out = os.Stdin, os.Stdout
			return RunInit(cmd.Context(), o, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "Path to the kubeconfig (default $KUBECONFIG, then ~/.kube/config).")
	f.StringVar(&o.Context, "context", "", "Kubeconfig context (default: the current one).")
	f.StringVar(&o.OutputDir, "output-dir", o.OutputDir, "Folder for profile.yaml and target.yaml (created; existing files are not overwritten).")
	return cmd
}

// kindChoice is one listable kind of the cluster.
type kindChoice struct {
	gvk        schema.GroupVersionKind
	resource   string
	namespaced bool
}

func (k kindChoice) String() string {
	gv := k.gvk.GroupVersion().String()
	return fmt.Sprintf("%s (%s)", k.gvk.Kind, gv)
}

// sampleSize is how many objects init reads to offer attributes.
const sampleSize = 5

// RunInit runs the wizard on the terminal in o.In and o.Out.
func RunInit(ctx context.Context, o InitOptions, stderr io.Writer) error {
	if !term.IsTerminal(int(o.In.Fd())) {
		return fatal("init is interactive: run it in a terminal (or write the manifests by hand; kollect validate checks them)")
	}
	for _, name := range []string{"profile.yaml", "target.yaml"} {
		if _, err := os.Stat(filepath.Join(o.OutputDir, name)); err == nil {
			return fatal("%s already exists: pick another --output-dir or move it away", filepath.Join(o.OutputDir, name))
		}
	}
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		loading.ExplicitPath = o.Kubeconfig
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return fatal("kubeconfig: %v", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return fatal("kubernetes client: %v", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fatal("kubernetes client: %v", err)
	}
	kinds, err := listableKinds(disco)
	if err != nil {
		return fatal("cannot list the cluster's kinds: %v", err)
	}
	form := func(groups ...*huh.Group) *huh.Form {
		return huh.NewForm(groups...).WithInput(o.In).WithOutput(o.Out)
	}
	var kind kindChoice
	opts := make([]huh.Option[kindChoice], 0, len(kinds))
	for _, k := range kinds {
		opts = append(opts, huh.NewOption(k.String(), k))
	}
	if err := form(huh.NewGroup(huh.NewSelect[kindChoice]().Title("Which kind should the inventory collect?").
		Description("/ filters, enter picks").Options(opts...).Value(&kind).Height(12))).RunWithContext(ctx); err != nil {
		return aborted(err)
	}
	secret := kind.gvk.Group == "" && kind.gvk.Kind == "Secret"
	if secret {
		sure := false
		if err := form(huh.NewGroup(huh.NewConfirm().Title("Sample Secret objects and allow exporting their data?").
			Description("Their values would be read now and written to every sink of this profile.").
			Affirmative("Yes, export Secret data").Negative("No").Value(&sure))).RunWithContext(ctx); err != nil {
			return aborted(err)
		}
		if !sure {
			return &ExitError{Code: 1, Err: errors.New("Secret data not confirmed: nothing sampled, nothing written")}
		}
	}
	list, err := dyn.Resource(schema.GroupVersionResource{Group: kind.gvk.Group, Version: kind.gvk.Version, Resource: kind.resource}).
		List(ctx, metav1.ListOptions{Limit: sampleSize})
	if err != nil {
		return fatal("sample %s: %v", kind.resource, err)
	}
	var samples []map[string]any
	for i := range list.Items {
		samples = append(samples, list.Items[i].Object)
	}
	fields := candidates(samples, secret)
	if len(fields) == 0 {
		return fatal("no %s in the cluster to sample: create one first, or write the profile by hand", kind.gvk.Kind)
	}
	var picked []string
	fopts := make([]huh.Option[string], 0, len(fields))
	for _, f := range fields {
		fopts = append(fopts, huh.NewOption(f.label(), f.path))
	}
	name, namespace, namespaces := strings.ToLower(kind.gvk.Kind)+"s", "default", ""
	if err := form(
		huh.NewGroup(huh.NewMultiSelect[string]().Title(fmt.Sprintf("Attributes to keep (sampled from %d %s)", len(samples), kind.resource)).
			Description("x toggles, / filters, enter confirms").Options(fopts...).Value(&picked).Height(14).
			Validate(func(v []string) error {
				if len(v) == 0 {
					return errors.New("pick at least one attribute")
				}
				return nil
			})),
		huh.NewGroup(
			huh.NewInput().Title("Name of the profile and target").Value(&name).Validate(dnsName),
			huh.NewInput().Title("Namespace the profile and target live in").Value(&namespace).Validate(dnsName),
			huh.NewInput().Title("Collect from which namespaces? (comma-separated; empty: all)").Value(&namespaces),
		)).RunWithContext(ctx); err != nil {
		return aborted(err)
	}
	profile, target := manifestsFor(kind, picked, name, namespace, namespaces, secret)
	if err := writeManifests(o.OutputDir, profile, target); err != nil {
		return fatal("%v", err)
	}
	fmt.Fprintf(o.Out, "wrote %s and %s\nnext: kollect collect -f %s\n", filepath.Join(o.OutputDir, "profile.yaml"),
		filepath.Join(o.OutputDir, "target.yaml"), o.OutputDir)
	return nil
}

func aborted(err error) error {
	if errors.Is(err, huh.ErrUserAborted) {
		return &ExitError{Code: 1, Err: errors.New("aborted: nothing written")}
	}
	return fatal("%v", err)
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func dnsName(s string) error {
	if len(s) > 63 || !dnsLabel.MatchString(s) {
		return errors.New("lower-case letters, digits and '-', at most 63")
	}
	return nil
}

// listableKinds are the kinds the cluster serves that can be listed, in
// their preferred version, sorted by kind.
func listableKinds(disco discovery.DiscoveryInterface) ([]kindChoice, error) {
	lists, err := disco.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	var out []kindChoice
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			out = append(out, kindChoice{gvk: gv.WithKind(r.Kind), resource: r.Name, namespaced: r.Namespaced})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].gvk.Kind != out[j].gvk.Kind {
			return out[i].gvk.Kind < out[j].gvk.Kind
		}
		return out[i].gvk.Group < out[j].gvk.Group
	})
	return out, nil
}

// writeManifests writes both files, never over existing ones.
func writeManifests(dir string, profile *kollectv1alpha1.KollectProfile, target *kollectv1alpha1.KollectTarget) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, obj := range map[string]any{"profile.yaml": profile, "target.yaml": target} {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(b); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// manifestsFor builds the profile and target the answers describe.
func manifestsFor(kind kindChoice, paths []string, name, namespace, namespaces string, secret bool) (*kollectv1alpha1.KollectProfile, *kollectv1alpha1.KollectTarget) {
	p := &kollectv1alpha1.KollectProfile{}
	p.APIVersion, p.Kind = kollectv1alpha1.GroupVersion.String(), "KollectProfile"
	p.Name, p.Namespace = name, namespace
	if secret {
		p.Annotations = map[string]string{compile.AllowSecretExtraction: "true"}
	}
	p.Spec.TargetGVK = kollectv1alpha1.GroupVersionKind{Group: kind.gvk.Group, Version: kind.gvk.Version, Kind: kind.gvk.Kind}
	sort.Strings(paths)
	for _, a := range attributeNames(paths) {
		p.Spec.Attributes = append(p.Spec.Attributes, kollectv1alpha1.ProfileAttribute{Name: a.name, Path: a.path, Optional: true})
	}
	t := &kollectv1alpha1.KollectTarget{}
	t.APIVersion, t.Kind = kollectv1alpha1.GroupVersion.String(), "KollectTarget"
	t.Name, t.Namespace = name, namespace
	t.Spec.ProfileRef = name
	for _, ns := range strings.Split(namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			t.Spec.IncludedNamespaces = append(t.Spec.IncludedNamespaces, ns)
		}
	}
	return p, t
}
