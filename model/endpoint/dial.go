package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// ErrForbidden marks a connection the policy refused.
var ErrForbidden = errors.New("endpoint forbidden")

// DialContext connects to address (host:port) only if the policy allows the
// address actually dialled: the host name is vetted first (loopback and
// metadata names), then every address it resolves to is checked by the
// dialer's Control hook right before the connection is made, so a name
// that resolves to an allowed address when checked and to a forbidden one
// when dialled (DNS rebinding) is refused. Every backend client dials
// through it.
func (p Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dial %q: %w", address, err)
	}
	if err := p.CheckHostName(host); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrForbidden, err)
	}
	d := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, addr string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return fmt.Errorf("%w: dialled address %q: %w", ErrForbidden, addr, err)
		}
		if err := p.checkAddr(ap.Addr().Unmap()); err != nil {
			return fmt.Errorf("%w: endpoint host %q: %w", ErrForbidden, host, err)
		}
		return nil
	}}
	if p.Lookup == nil || net.ParseIP(host) != nil {
		return d.DialContext(ctx, network, address)
	}
	// A resolver of the policy's own (tests): dial what it answers.
	addrs, err := p.Lookup(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve endpoint host %q: %w", host, err)
	}
	last := fmt.Errorf("endpoint host %q resolves to no address", host)
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}
