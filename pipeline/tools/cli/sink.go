package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/pipeline/backends"
	"kollect.dev/kollect/sinks"
)

// sinkOutput is where --sink sends each target's snapshot: a backend the
// operator's registry builds for the sink per target, as the operator
// builds one per inventory (a backend remembers what its inventory holds:
// one shared by two targets would take the second's export as the first's
// next one and delete the first's files), fed the delta from what it was
// last sent (the first export is a full reconcile).
type sinkOutput struct {
	name     string
	cluster  string
	sf       *sinkFile
	obj      client.Object // the sink, with the rows' cluster
	state    string
	backends map[string]sinks.Backend
	last     map[string]*rows.Snapshot
}

// envRef is a Secret value that names an environment variable.
var envRef = regexp.MustCompile(`^\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}$`)

// kindOf names a sink object's kind.
func kindOf(o client.Object) string {
	switch o.(type) {
	case *kollectv1alpha1.KollectDatabaseSink:
		return "KollectDatabaseSink"
	case *kollectv1alpha1.KollectEventSink:
		return "KollectEventSink"
	}
	return "KollectSnapshotSink"
}

// sinkFile is the --sink manifest, read and checked once: its one sink
// object, its type in the registry and its resolved credentials.
type sinkFile struct {
	file     string
	obj      client.Object
	typ      string
	registry *backends.Registry
	creds    backends.Credentials
}

// loadSink reads the one sink in file and resolves its credentials from
// Secret manifests in file or in the -f files; values ${env:VAR} are read
// from the environment. The CLI runs on the user's machine and dials what
// the user names, loopback and private addresses included.
func loadSink(file string, cfg *Config) (*sinkFile, error) {
	sc, err := Load([]string{file})
	if err != nil {
		return nil, fmt.Errorf("--sink: %w", err)
	}
	if len(sc.Sinks) != 1 {
		return nil, fmt.Errorf("--sink %s: want exactly one sink (KollectSnapshotSink, KollectDatabaseSink or KollectEventSink), found %d", file, len(sc.Sinks))
	}
	sf := &sinkFile{file: file, obj: sc.Sinks[0], registry: backends.Default(endpoint.Policy{AllowPrivate: true, AllowLoopback: true})}
	t, err := sf.registry.Type(sf.obj)
	if err != nil {
		return nil, fmt.Errorf("--sink %s: %w", file, err)
	}
	sf.typ = t.Name
	if t.Secret != nil {
		if sf.creds.Data, err = sinkSecret(sf.obj, t.Secret(sf.obj), cfg, sc); err != nil {
			return nil, err
		}
	}
	return sf, nil
}

// name describes the sink for messages.
func (sf *sinkFile) name() string {
	return fmt.Sprintf("%s %s/%s (%s, %s)", kindOf(sf.obj), sf.obj.GetNamespace(), sf.obj.GetName(), sf.typ, commonOf(sf.obj).Endpoint)
}

// cluster is the cluster the rows of a context carry: the sink's
// spec.cluster, or the context's name.
func (sf *sinkFile) cluster(contextName string) string {
	if c := commonOf(sf.obj).Cluster; c != "" {
		return c
	}
	return contextName
}

// open builds the sink's backend through the registry, as the operator
// would, for the rows of one cluster.
func (sf *sinkFile) open(ctx context.Context, cluster string) (*sinkOutput, error) {
	obj := sf.obj.DeepCopyObject().(client.Object)
	commonOf(obj).Cluster = cluster
	state, err := os.MkdirTemp("", "kollect-collect-")
	if err != nil {
		return nil, err
	}
	out := &sinkOutput{name: sf.name(), cluster: cluster, sf: sf, obj: obj, state: state,
		backends: map[string]sinks.Backend{}, last: map[string]*rows.Snapshot{}}
	// The sink is checked now, before anything is collected into it.
	if _, err := out.backend(ctx, "check"); err != nil {
		out.close()
		return nil, err
	}
	return out, nil
}

// backend is the target's backend (key namespace/name), built on first
// use in a state directory of its own.
func (o *sinkOutput) backend(ctx context.Context, key string) (sinks.Backend, error) {
	if b := o.backends[key]; b != nil {
		return b, nil
	}
	dir := filepath.Join(o.state, fmt.Sprint(len(o.backends)))
	b, err := o.sf.registry.Build(ctx, o.obj, o.sf.creds, dir)
	if err != nil {
		return nil, fmt.Errorf("--sink %s: %w", o.sf.file, err)
	}
	o.backends[key] = b
	return b, nil
}

func commonOf(o client.Object) *kollectv1alpha1.SinkCommonFields {
	switch s := o.(type) {
	case *kollectv1alpha1.KollectDatabaseSink:
		return &s.Spec.SinkCommonFields
	case *kollectv1alpha1.KollectEventSink:
		return &s.Spec.SinkCommonFields
	case *kollectv1alpha1.KollectSnapshotSink:
		return &s.Spec.SinkCommonFields
	}
	return &kollectv1alpha1.SinkCommonFields{}
}

func sinkSecret(s client.Object, ref *kollectv1alpha1.SecretReference, sets ...*Config) (map[string][]byte, error) {
	if ref == nil {
		return nil, nil
	}
	ns := ref.Namespace
	if ns == "" {
		ns = s.GetNamespace()
	}
	var data map[string][]byte
	for _, c := range sets {
		if d, ok := c.Secrets[ns+"/"+ref.Name]; ok {
			data = d
		}
	}
	if data == nil {
		return nil, fmt.Errorf("the sink's secretRef names Secret %s/%s, which is not among the files; add its manifest (values may be ${env:VAR})", ns, ref.Name)
	}
	out := make(map[string][]byte, len(data))
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := data[k]
		if m := envRef.FindSubmatch(v); m != nil {
			env := os.Getenv(string(m[1]))
			if env == "" {
				return nil, fmt.Errorf("Secret %s/%s key %s reads environment variable %s, which is not set", ns, ref.Name, k, m[1])
			}
			v = []byte(env)
		}
		out[k] = v
	}
	return out, nil
}

// export sends a target's snapshot: the delta from the last one this run
// sent for it.
func (o *sinkOutput) export(ctx context.Context, snap *rows.Snapshot) error {
	key := snap.Inventory.Namespace + "/" + snap.Inventory.Name
	b, err := o.backend(ctx, key)
	if err != nil {
		return err
	}
	if _, err := b.Export(ctx, rows.Diff(o.last[key], snap)); err != nil {
		return err
	}
	o.last[key] = snap
	return nil
}

func (o *sinkOutput) close() {
	for _, b := range o.backends {
		if c, ok := b.(interface{ Close() }); ok {
			c.Close()
		}
	}
	os.RemoveAll(o.state)
}
