package backends

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
	"kollect.dev/kollect/sinks/gitlab"
)

// gitlabType writes the Git sink's layout through GitLab's REST API, one
// commit per export, without a clone.
func gitlabType() Type {
	return Type{Family: "snapshot", Name: "gitlab", Admit: admitGit, Preview: previewGit, Verified: "GitLab project reachable with this token",
		Secret: func(o client.Object) *kollectv1alpha1.SecretReference {
			return git.CredentialsRef(&o.(*kollectv1alpha1.KollectSnapshotSink).Spec)
		},
		Build: buildGitLab}
}

func buildGitLab(ctx context.Context, obj client.Object, creds Credentials, env Env) (sinks.Backend, error) {
	s := obj.(*kollectv1alpha1.KollectSnapshotSink)
	raw, branch, err := git.Endpoint(&s.Spec) // #branch=<name> or git.branch, as for Git
	if err != nil {
		return nil, sinks.Permanent(err)
	}
	base, project, _, err := gitlab.ParseEndpoint(raw)
	if err != nil {
		return nil, sinks.Permanent(err)
	}
	if err := env.Policy.CheckURL(ctx, base, "https", "http"); err != nil {
		return nil, err
	}
	token := strings.TrimSpace(string(creds.Data["token"]))
	if token == "" {
		token = strings.TrimSpace(string(creds.Data["password"]))
	}
	if strings.HasPrefix(base, "http://") && token != "" && s.Annotations[git.AllowPlainHTTPCredentials] != "true" {
		return nil, sinks.Permanent(fmt.Errorf("the GitLab token would travel over plain http to %s: use https, or set the annotation %s: \"true\" on the sink (development only)",
			base, git.AllowPlainHTTPCredentials))
	}
	gcfg, err := git.FromSpec(s.Name, &s.Spec, nil, "")
	if err != nil {
		return nil, sinks.Permanent(err)
	}
	hc, err := sinks.HTTPClient(GuardedDial(env.Policy), creds.CA, s.Spec.TLS != nil && s.Spec.TLS.InsecureSkipVerify)
	if err != nil {
		return nil, sinks.Permanent(err)
	}
	cfg := gitlab.Config{BaseURL: base, Project: project, Branch: branch, Token: token, Git: gcfg, HTTPClient: hc}
	if gl := s.Spec.GitLab; gl != nil && gl.MergeRequest != nil && gl.MergeRequest.Mode == "merge_request" {
		mr := gl.MergeRequest
		cfg.MergeRequest, cfg.TargetBranch, cfg.BranchPrefix, cfg.TitleTemplate = true, mr.TargetBranch, mr.BranchPrefix, mr.TitleTemplate
	}
	g, err := gitlab.New(cfg)
	if err != nil {
		return nil, err
	}
	return &probed{Backend: sinks.Whole(g), probe: g.Probe, claims: g}, nil
}
