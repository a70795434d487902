package endpoint_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"kollect.dev/kollect/model/endpoint"
)

// rebinding answers a public address the first time a name is resolved
// and loopback afterwards: the check and the dial see different answers.
func rebinding() func(context.Context, string) ([]netip.Addr, error) {
	var calls atomic.Int32
	return func(context.Context, string) ([]netip.Addr, error) {
		if calls.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
}

func TestTheDialerChecksTheAddressItConnectsTo(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	ctx := context.Background()
	cases := []struct {
		name   string
		policy endpoint.Policy
		addr   string
		want   string // "" when the dial must succeed
	}{
		{"DNS rebinding to loopback", endpoint.Policy{Lookup: rebinding()}, "rebind.example:" + port, "loopback"},
		{"loopback literal", endpoint.Policy{AllowPrivate: true}, "127.0.0.1:" + port, "loopback"},
		{"loopback name", endpoint.Policy{}, "localhost:" + port, "not allowed"},
		{"metadata name", endpoint.Policy{AllowPrivate: true, AllowLoopback: true}, "metadata.google.internal:80", "metadata"},
		{"metadata over NAT64", endpoint.Policy{AllowPrivate: true}, "[64:ff9b::a9fe:a9fe]:80", "169.254.169.254"},
		{"metadata over 6to4", endpoint.Policy{AllowPrivate: true}, "[2002:a9fe:a9fe::1]:80", "169.254.169.254"},
		{"loopback allowed for development", endpoint.Policy{AllowLoopback: true}, "127.0.0.1:" + port, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "DNS rebinding to loopback" {
				// The name passes the resolving check...
				if err := tc.policy.CheckHost(ctx, "rebind.example"); err != nil {
					t.Fatalf("the first answer is public and should pass the check: %v", err)
				}
			}
			c, err := tc.policy.DialContext(ctx, "tcp", tc.addr)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("want a connection, got %v", err)
				}
				c.Close()
				return
			}
			if c != nil {
				c.Close()
			}
			if !errors.Is(err, endpoint.ErrForbidden) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want a refusal mentioning %q, got %v", tc.want, err)
			}
		})
	}
}
