package git

import (
	"fmt"
	"net/url"
	"strings"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// Endpoint returns the sink's remote URL without userinfo or fragment, and
// the branch named by spec.git.branch, the #branch= fragment, or main.
func Endpoint(spec *kollectv1alpha1.KollectSnapshotSinkSpec) (string, string, error) {
	raw := spec.Endpoint
	if raw == "" && spec.Git != nil {
		raw = spec.Git.Endpoint
	}
	if raw == "" {
		return "", "", fmt.Errorf("spec.endpoint is required for a git sink")
	}
	if !strings.Contains(raw, "://") {
		return "", "", fmt.Errorf("spec.endpoint %q must be a URL (https://, http:// or file://); scp-style user@host:path is not supported", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("spec.endpoint: %w", err)
	}
	branch := "main"
	if b, ok := strings.CutPrefix(u.Fragment, "branch="); ok && b != "" {
		branch = b
	}
	if spec.Git != nil && spec.Git.Branch != "" {
		branch = spec.Git.Branch
	}
	if u.Scheme == "ssh" && u.User != nil {
		u.User = url.User(u.User.Username()) // the SSH user is not a secret; a password would be
	} else {
		u.User = nil
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), branch, nil
}

// AllowPlainHTTPCredentials is the sink annotation that lets credentials
// travel over plain http:// (an in-cluster development server).
const AllowPlainHTTPCredentials = "kollect.dev/allow-plain-http-credentials"

// FromSink builds the configuration of a snapshot sink object: its spec,
// and the annotation that allows credentials over plain HTTP.
func FromSink(s *kollectv1alpha1.KollectSnapshotSink, secret map[string][]byte, mirrorDir string) (Config, error) {
	cfg, err := FromSpec(s.Name, &s.Spec, secret, mirrorDir)
	cfg.AllowPlainHTTPCredentials = strings.EqualFold(strings.TrimSpace(s.Annotations[AllowPlainHTTPCredentials]), "true")
	return cfg, err
}

// checkTransport refuses credentials that would cross the network in the
// clear.
func (c Config) checkTransport() error {
	if strings.HasPrefix(strings.ToLower(c.URL), "http://") && (c.Token != "" || c.Username != "") && !c.AllowPlainHTTPCredentials {
		return fmt.Errorf("credentials over plain http:// are refused (%s): use https://, or annotate the sink %s: \"true\" for a development server",
			redact(c.URL), AllowPlainHTTPCredentials)
	}
	return nil
}

// FromSpec builds a Git sink configuration from a snapshot sink and the
// data of its credentials Secret (nil when it has none).
func FromSpec(name string, spec *kollectv1alpha1.KollectSnapshotSinkSpec, secret map[string][]byte, mirrorDir string) (Config, error) {
	endpoint, branch, err := Endpoint(spec)
	if err != nil {
		return Config{}, err
	}
	// A new mirror fetches one commit of the branch (cloneDepth, default
	// 1, as upstream): an export needs the tip's tree, not the history,
	// which grows with every export the remote ever took.
	cfg := Config{URL: endpoint, Branch: branch, SinkName: name, MirrorDir: mirrorDir, CloneDepth: 1}
	if secret != nil {
		cfg.Username = string(secret["username"])
		cfg.Token = string(secret["password"])
		if t := secret["token"]; len(t) > 0 {
			cfg.Token = string(t)
		}
		for _, k := range []string{"ssh-privatekey", "identity", "id_rsa"} {
			if v := secret[k]; len(v) > 0 {
				cfg.SSHKey = v
				break
			}
		}
		cfg.KnownHosts = secret["known_hosts"]
	}
	if t := spec.TLS; t != nil {
		// One switch for both transports, as upstream: an https://
		// remote's certificate, an ssh:// remote's host key. A CA from
		// tls.caSecretRef is resolved by the caller into CABundle.
		cfg.InsecureHostKey, cfg.InsecureSkipTLS, cfg.CABundle = t.InsecureSkipVerify, t.InsecureSkipVerify, t.CABundle
	}
	format := "yaml"
	if spec.Serialization != nil && spec.Serialization.Format != "" {
		format = strings.ToLower(spec.Serialization.Format)
	}
	l := Layout{Format: format, Cluster: spec.Cluster, DocumentPath: spec.PathTemplate}
	if g := spec.Git; g != nil {
		cfg.CommitMessage, cfg.ForcePush = g.CommitMessage, g.PushPolicy == "ForcePush"
		if g.CloneDepth > 0 {
			cfg.CloneDepth = int(g.CloneDepth)
		}
		cfg.CommitBody, cfg.Trailers = g.CommitBody, g.CommitTrailers
		if g.Author != nil {
			cfg.AuthorName, cfg.AuthorEmail = g.Author.Name, g.Author.Email
		}
		if l.DocumentPath == "" {
			l.DocumentPath = g.PathTemplate
		}
	}
	if lay := spec.Layout; lay != nil {
		l.Mode, l.Content, l.ItemPath = lay.Mode, lay.Content, lay.PathTemplate
		l.Index = lay.Mode == "split"
		if lay.Index != nil {
			if lay.Index.Enabled != nil {
				l.Index = *lay.Index.Enabled
			}
			l.IndexPath = lay.Index.PathTemplate
		}
		if lay.Mode == "split" {
			l.Mode = "perResource"
		}
		if f := lay.Filename; f != nil {
			l.GroupInPath, l.MaxSegment = f.GroupInPath, int(f.MaxSegmentLength)
			l.KeepKindCase = f.LowercaseKind != nil && !*f.LowercaseKind
		}
	}
	cfg.Layout = l
	return cfg, nil
}

// CredentialsRef is the Secret holding a Git sink's credentials:
// git.auth.secretRef, else spec.secretRef.
func CredentialsRef(spec *kollectv1alpha1.KollectSnapshotSinkSpec) *kollectv1alpha1.SecretReference {
	if spec.Git != nil && spec.Git.Auth != nil && spec.Git.Auth.SecretRef != nil {
		return spec.Git.Auth.SecretRef
	}
	return spec.SecretRef
}
