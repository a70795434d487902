package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/tools/manifests"
)

// Config is what the -f files declare.
type Config struct {
	Profiles []kollectv1alpha1.KollectProfile
	Targets  []kollectv1alpha1.KollectTarget
	// Sinks are sink objects of any family (KollectSnapshotSink,
	// KollectDatabaseSink, KollectEventSink).
	Sinks []client.Object
	// Secrets are Secret manifests (data and stringData merged), by
	// namespace/name, for a sink's secretRef.
	Secrets map[string]map[string][]byte
	Skipped []string // other kinds, reported as warnings
}

// Load reads YAML or JSON files, or every *.yaml/*.yml/*.json directly in
// a folder.
func Load(paths []string) (*Config, error) {
	files, err := manifests.Files(paths)
	if err != nil {
		return nil, err
	}
	cfg := &Config{}
	for _, f := range files {
		if err := cfg.read(f); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

func (c *Config) read(file string) error {
	objs, err := manifests.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for _, u := range objs {
		where := fmt.Sprintf("%s: %s %q", file, u.GetKind(), u.GetName())
		if u.GetNamespace() == "" {
			u.SetNamespace("default")
		}
		raw, _ := json.Marshal(u.Object)
		if u.GetAPIVersion() == "v1" && u.GetKind() == "Secret" {
			if err := c.addSecret(raw); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			continue
		}
		if !strings.HasPrefix(u.GetAPIVersion(), "kollect.dev/") {
			c.Skipped = append(c.Skipped, where)
			continue
		}
		switch u.GetKind() {
		case "KollectProfile":
			var p kollectv1alpha1.KollectProfile
			if err := json.Unmarshal(raw, &p); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			c.Profiles = append(c.Profiles, p)
		case "KollectTarget":
			var t kollectv1alpha1.KollectTarget
			if err := json.Unmarshal(raw, &t); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			c.Targets = append(c.Targets, t)
		case "KollectSnapshotSink", "KollectDatabaseSink", "KollectEventSink":
			var sk client.Object = &kollectv1alpha1.KollectSnapshotSink{}
			switch u.GetKind() {
			case "KollectDatabaseSink":
				sk = &kollectv1alpha1.KollectDatabaseSink{}
			case "KollectEventSink":
				sk = &kollectv1alpha1.KollectEventSink{}
			}
			if err := json.Unmarshal(raw, sk); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			c.Sinks = append(c.Sinks, sk)
		default:
			c.Skipped = append(c.Skipped, where)
		}
	}
	return nil
}

func (c *Config) addSecret(raw []byte) error {
	var sec corev1.Secret
	if err := json.Unmarshal(raw, &sec); err != nil {
		return err
	}
	data := map[string][]byte{}
	for k, v := range sec.Data {
		data[k] = v
	}
	for k, v := range sec.StringData {
		data[k] = []byte(v)
	}
	if c.Secrets == nil {
		c.Secrets = map[string]map[string][]byte{}
	}
	c.Secrets[sec.Namespace+"/"+sec.Name] = data
	return nil
}

// Profile finds a target's profile: same namespace first, then by name.
func (c *Config) Profile(t *kollectv1alpha1.KollectTarget) *kollectv1alpha1.KollectProfile {
	var byName *kollectv1alpha1.KollectProfile
	for i := range c.Profiles {
		p := &c.Profiles[i]
		if p.Name != t.Spec.ProfileRef {
			continue
		}
		if p.Namespace == t.Namespace {
			return p
		}
		byName = p
	}
	return byName
}
