package git

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"

	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshAuth builds public-key auth for an ssh:// remote. Host keys are
// checked against the known_hosts lines from the credentials Secret; only
// an explicit InsecureHostKey skips the check.
func sshAuth(cfg Config) (*gitssh.PublicKeys, error) {
	if len(cfg.SSHKey) == 0 {
		return nil, errors.New("an ssh:// remote needs a private key under ssh-privatekey (or identity, id_rsa) in the credentials Secret")
	}
	user := "git"
	if u, err := url.Parse(cfg.URL); err == nil && u.User != nil && u.User.Username() != "" {
		user = u.User.Username()
	}
	keys, err := gitssh.NewPublicKeys(user, cfg.SSHKey, "")
	if err != nil {
		return nil, fmt.Errorf("ssh private key: %w", err)
	}
	switch {
	case cfg.InsecureHostKey:
		keys.HostKeyCallback = ssh.InsecureIgnoreHostKey()
	case len(cfg.KnownHosts) > 0:
		cb, err := hostKeyCallback(cfg.KnownHosts)
		if err != nil {
			return nil, err
		}
		keys.HostKeyCallback = cb
	default:
		return nil, errors.New("an ssh:// remote needs known_hosts in the credentials Secret (or tls.insecureSkipVerify: true to skip host-key checking)")
	}
	return keys, nil
}

// hostKeyCallback checks host keys against known_hosts lines held in
// memory.
func hostKeyCallback(lines []byte) (ssh.HostKeyCallback, error) {
	type entry struct {
		hosts []string
		key   ssh.PublicKey
	}
	var entries []entry
	rest := lines
	for len(bytes.TrimSpace(rest)) > 0 {
		_, hosts, key, _, next, err := ssh.ParseKnownHosts(rest)
		if err != nil {
			return nil, fmt.Errorf("known_hosts: %w", err)
		}
		entries = append(entries, entry{hosts: hosts, key: key})
		rest = next
	}
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		addr := knownhosts.Normalize(hostname)
		for _, e := range entries {
			for _, h := range e.hosts {
				if knownhosts.Normalize(h) == addr && bytes.Equal(e.key.Marshal(), key.Marshal()) {
					return nil
				}
			}
		}
		return fmt.Errorf("ssh host key of %s is not in known_hosts", hostname)
	}, nil
}
