package backends

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
)

func gitType() Type {
	return Type{Family: "snapshot", Name: "git", Admit: admitGit, Preview: previewGit, Verified: git.ProbeMessage,
		Secret: func(o client.Object) *kollectv1alpha1.SecretReference {
			return git.CredentialsRef(&o.(*kollectv1alpha1.KollectSnapshotSink).Spec)
		},
		Build: buildGit}
}

func buildGit(ctx context.Context, obj client.Object, creds Credentials, env Env) (sinks.Backend, error) {
	s := obj.(*kollectv1alpha1.KollectSnapshotSink)
	url, _, err := git.Endpoint(&s.Spec)
	if err != nil {
		return nil, err
	}
	schemes := []string{"https", "http", "ssh"}
	if env.Policy.AllowLoopback {
		schemes = append(schemes, "file") // a repository on the operator's own disk: development only
	} else if strings.HasPrefix(url, "file://") {
		return nil, sinks.Permanent(errors.New("file:// remotes name a repository on the operator's own disk and are refused; " +
			"use an https:// or ssh:// remote (file:// is only for local development, with --dev-allow-loopback-sinks)"))
	}
	if err := env.Policy.CheckURL(ctx, url, schemes...); err != nil {
		return nil, err
	}
	cfg, err := git.FromSink(s, creds.Data, env.StateDir)
	if err != nil {
		return nil, err
	}
	cfg.Clock = env.Clock
	if len(creds.CA) > 0 {
		cfg.CABundle = creds.CA // tls.caBundle, or the PEM tls.caSecretRef names
	}
	if env.Clients != nil && env.SharedDir != "" {
		// One mirror per repository, whoever's sink names it. A backend
		// without a shared directory (a probe's) keeps a mirror of its
		// own: it must neither open the shared one where it would not
		// stay nor join it.
		sum := sha256.Sum256([]byte(cfg.URL))
		cfg.Clients, cfg.MirrorDir = env.Clients, filepath.Join(env.SharedDir, "repo-"+hex.EncodeToString(sum[:8]))
	}
	g, err := git.New(cfg)
	if err != nil {
		return nil, err
	}
	return &probed{Backend: sinks.Whole(g), probe: func(ctx context.Context) error { return git.Probe(ctx, cfg) }, claims: g, close: g.Close}, nil
}

// probed gives a backend adapted by sinks.Whole its probe and its writer
// records back.
// The capabilities a wrapper forwards: those of what it wraps, lost
// otherwise (an embedded sinks.Backend forwards Export only).
var (
	_ sinks.Prober     = (*probed)(nil)
	_ sinks.Closer     = (*probed)(nil)
	_ sinks.PartWanter = (*probed)(nil)
	_ sinks.Keeper     = (*probed)(nil)
	_ sinks.Prober     = (*store)(nil)
	_ sinks.Closer     = (*store)(nil)
	_ sinks.PartWanter = (*store)(nil)
	_ sinks.Keeper     = (*store)(nil)
)

type probed struct {
	sinks.Backend
	probe  func(ctx context.Context) error
	claims sinks.Claims
	close  func() // nil: nothing to release
}

func (p *probed) Probe(ctx context.Context) error { return p.probe(ctx) }

// Close releases what the backend holds.
func (p *probed) Close() {
	if p.close != nil {
		p.close()
	}
}

// Claims returns the backend's writer records.
func (p *probed) Claims() sinks.Claims { return p.claims }

// KeepsTargets asks the adapted backend.
func (p *probed) KeepsTargets() bool { return sinks.KeepsTargets(p.Backend) }

// WantsParts asks the adapted backend.
func (p *probed) WantsParts(snap *rows.Snapshot) bool { return sinks.WantsParts(p.Backend, snap) }
