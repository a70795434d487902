package endpoint

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Policy says which destinations are acceptable.
type Policy struct {
	// AllowPrivate permits RFC 1918 and IPv6 ULA addresses (in-cluster
	// services).
	AllowPrivate bool
	// AllowLoopback permits loopback HTTP(S) remotes. Development and tests
	// only: never set it in a cluster.
	AllowLoopback bool
	// Lookup resolves host names; nil uses the system resolver.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

var blockedNames = []string{"localhost", "localhost.localdomain", "metadata", "metadata.google.internal",
	"instance-data", "instance-data.ec2.internal"}

var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"), // CGNAT
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("fd00:ec2::254/128"),
}

// CheckURL validates a URL endpoint. schemes lists the accepted schemes;
// file:// URLs (local repositories) carry no host and pass when listed.
func (p Policy) CheckURL(ctx context.Context, raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("endpoint %q is not a URL: %w", raw, err)
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	if !ok {
		return fmt.Errorf("endpoint scheme %q is not supported here (use one of %s)", u.Scheme, strings.Join(schemes, ", "))
	}
	if u.Scheme == "file" {
		return nil
	}
	return p.CheckHost(ctx, u.Hostname())
}

// CheckHostName refuses host names that stand for loopback or a metadata
// service, without resolving them.
func (p Policy) CheckHostName(host string) error {
	if host == "" {
		return fmt.Errorf("endpoint has no host")
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	loopbackName := h == "localhost" || strings.HasSuffix(h, ".localhost")
	for _, b := range blockedNames {
		if h == b && !(loopbackName && p.AllowLoopback) {
			return fmt.Errorf("endpoint host %q is not allowed (loopback or metadata service)", host)
		}
	}
	if strings.HasSuffix(h, ".localhost") && !p.AllowLoopback {
		return fmt.Errorf("endpoint host %q is not allowed (loopback)", host)
	}
	return nil
}

// CheckHost validates a host name or literal address, resolving the name.
func (p Policy) CheckHost(ctx context.Context, host string) error {
	if err := p.CheckHostName(host); err != nil {
		return err
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(h); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lookup := p.Lookup
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		if addrs, err = lookup(ctx, h); err != nil {
			return fmt.Errorf("resolve endpoint host %q: %w", host, err)
		}
	}
	for _, a := range addrs {
		if err := p.checkAddr(a.Unmap()); err != nil {
			return fmt.Errorf("endpoint host %q: %w", host, err)
		}
	}
	return nil
}

// IPv6 forms that carry an IPv4 address: NAT64 (the well-known and the
// local-use prefixes) and 6to4. The IPv4 address inside is checked too, so
// the metadata service is not reachable as 64:ff9b::a9fe:a9fe.
var (
	nat64Prefixes = []netip.Prefix{netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48")}
	sixToFour     = netip.MustParsePrefix("2002::/16")
)

// embeddedIPv4 returns the IPv4 address a NAT64 or 6to4 address carries.
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	for _, p := range nat64Prefixes {
		if p.Contains(a) {
			return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
		}
	}
	if sixToFour.Contains(a) {
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

func (p Policy) checkAddr(a netip.Addr) error {
	if v4, ok := embeddedIPv4(a); ok {
		if err := p.checkAddr(v4); err != nil {
			return fmt.Errorf("address %s carries %s: %w", a, v4, err)
		}
	}
	switch {
	case a.IsLoopback():
		if p.AllowLoopback {
			return nil
		}
		return fmt.Errorf("address %s is loopback", a)
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(), a.IsMulticast(), a.IsUnspecified(), a.IsInterfaceLocalMulticast():
		return fmt.Errorf("address %s is link-local, multicast or unspecified", a)
	}
	for _, pfx := range blockedPrefixes {
		if pfx.Contains(a) {
			return fmt.Errorf("address %s is in the reserved range %s", a, pfx)
		}
	}
	if a.IsPrivate() && !p.AllowPrivate {
		return fmt.Errorf("address %s is private; start the operator with --allow-private-sinks to permit in-cluster sinks", a)
	}
	return nil
}

// CheckAtAdmission is the admission-time layer of the guard: the names that stand for loopback or metadata services and
// literal addresses are refused, file:// URLs unless loopback is allowed
// (development), without resolving anything: names are checked again, on
// the address really dialled, when a backend connects. raw is a URL, or a
// host:port when it has no scheme (Kafka brokers).
func (p Policy) CheckAtAdmission(raw string) error {
	host := raw
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return fmt.Errorf("endpoint %q is not a URL: %w", raw, err)
		}
		if u.Scheme == "file" {
			if p.AllowLoopback {
				return nil
			}
			return fmt.Errorf("file:// endpoints are not allowed")
		}
		host = u.Hostname()
	} else if h, _, err := net.SplitHostPort(raw); err == nil {
		host = h
	}
	if err := p.CheckHostName(host); err != nil {
		return err
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if err := p.checkAddr(a.Unmap()); err != nil {
			return fmt.Errorf("endpoint host %q: %w", host, err)
		}
	}
	return nil
}
