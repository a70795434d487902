package cli

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
)

// sinkOutput is where --sink sends each target's snapshot.
type sinkOutput struct {
	name    string
	cluster string
	backend sinks.Snapshot
	mirror  string
}

// envRef is a Secret value that names an environment variable.
var envRef = regexp.MustCompile(`^\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}$`)

// openSink reads the one KollectSnapshotSink in file and builds its
// backend. Credentials come from Secret manifests in file or in the -f
// files; values ${env:VAR} are read from the environment.
func openSink(file string, cfg *Config) (*sinkOutput, error) {
	sc, err := Load([]string{file})
	if err != nil {
		return nil, fmt.Errorf("--sink: %w", err)
	}
	if len(sc.Sinks) != 1 {
		return nil, fmt.Errorf("--sink %s: want exactly one KollectSnapshotSink, found %d", file, len(sc.Sinks))
	}
	s := sc.Sinks[0]
	typ := s.Spec.Type
	if typ == "" && s.Spec.Git != nil {
		typ = "git"
	}
	if typ != "git" {
		return nil, fmt.Errorf("--sink %s: %s sinks are not supported by the CLI; use a git sink or stdout", file, typ)
	}
	secret, err := sinkSecret(&s, cfg, sc)
	if err != nil {
		return nil, err
	}
	mirror, err := os.MkdirTemp("", "kollect-collect-")
	if err != nil {
		return nil, err
	}
	gc, err := git.FromSink(&s, secret, mirror)
	if err != nil {
		os.RemoveAll(mirror)
		return nil, fmt.Errorf("--sink %s: %w", file, err)
	}
	backend, err := git.New(gc)
	if err != nil {
		os.RemoveAll(mirror)
		return nil, fmt.Errorf("--sink %s: %w", file, err)
	}
	return &sinkOutput{name: fmt.Sprintf("KollectSnapshotSink %s/%s (%s)", s.Namespace, s.Name, gc.URL), cluster: s.Spec.Cluster,
		backend: backend, mirror: mirror}, nil
}

func sinkSecret(s *kollectv1alpha1.KollectSnapshotSink, sets ...*Config) (map[string][]byte, error) {
	ref := git.CredentialsRef(&s.Spec)
	if ref == nil {
		return nil, nil
	}
	ns := ref.Namespace
	if ns == "" {
		ns = s.Namespace
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

func (o *sinkOutput) export(ctx context.Context, snap *rows.Snapshot) error {
	_, err := o.backend.Export(ctx, snap)
	return err
}

func (o *sinkOutput) close() { os.RemoveAll(o.mirror) }
