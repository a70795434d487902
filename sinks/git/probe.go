package git

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
)

// ProbeMessage is the ConnectionVerified message upstream writes on success.
const ProbeMessage = "TLS and git remote reachability verified"

// Probe lists the remote's refs (git ls-remote): it proves the remote is
// reachable and the credentials are accepted. An empty repository counts
// as reachable.
func Probe(ctx context.Context, cfg Config) error {
	if err := cfg.checkTransport(); err != nil {
		return err
	}
	s := &Sink{cfg: cfg}
	if strings.HasPrefix(cfg.URL, "ssh://") {
		a, err := sshAuth(cfg)
		if err != nil {
			return err
		}
		s.sshAuth = a
	}
	remote := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{cfg.URL}})
	_, err := remote.ListContext(ctx, &gogit.ListOptions{Auth: s.auth(), ProxyOptions: sshProxy(cfg.URL),
		CABundle: cfg.CABundle, InsecureSkipTLS: cfg.InsecureSkipTLS})
	if err == nil || errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil
	}
	return fmt.Errorf("git ls-remote %s: %w", redact(cfg.URL), err)
}
