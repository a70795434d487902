package git

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// GuardHTTP makes every Git HTTP(S) connection of this process dial through
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
}
