package git

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"golang.org/x/net/proxy"
)

// GuardHTTP makes every Git HTTP(S) and SSH connection of this process dial through
// dial, so the endpoint policy checks the address actually connected to,
// for fetches, pushes, probes and redirects alike; proxies from the
// environment are not used. go-git keeps one transport per scheme for the
// whole process, so this is set once, where the operator's policy is
// built.
func GuardHTTP(dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	c := &http.Client{
		Transport: &http.Transport{DialContext: dial, Proxy: nil, ForceAttemptHTTP2: true,
			TLSHandshakeTimeout: 10 * time.Second, IdleConnTimeout: 90 * time.Second, MaxIdleConns: 16},
		// A redirect dials through the guard too; net/http drops the
		// credentials when it leaves the host.
		CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("git: stopped after 5 redirects")
			}
			return nil
		},
	}
	t := githttp.NewClient(c)
	client.InstallProtocol("http", t)
	client.InstallProtocol("https", t)
	// go-git dials SSH through a proxy dialer when one is named (else
	// through the environment's ALL_PROXY): name one that is the guard.
	proxy.RegisterDialerType(guardScheme, func(*url.URL, proxy.Dialer) (proxy.Dialer, error) {
		return guardDialer(dial), nil
	})
	sshGuarded.Store(true)
}

// guardScheme names the guard as an SSH "proxy" for go-git.
const guardScheme = "kollect-guard"

var sshGuarded atomic.Bool

// sshProxy routes an ssh:// remote's connection through the guard once it
// is installed; other remotes get no proxy.
func sshProxy(remote string) transport.ProxyOptions {
	if !sshGuarded.Load() || !strings.HasPrefix(remote, "ssh://") {
		return transport.ProxyOptions{}
	}
	return transport.ProxyOptions{URL: guardScheme + "://guard"}
}

type guardDialer func(ctx context.Context, network, addr string) (net.Conn, error)

func (d guardDialer) Dial(network, addr string) (net.Conn, error) {
	return d(context.Background(), network, addr)
}

func (d guardDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return d(ctx, network, addr)
}
