package endpoint_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"kollect.dev/kollect/model/endpoint"
)

func TestCheckURL(t *testing.T) {
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "git.svc.cluster.local":
			return []netip.Addr{netip.MustParseAddr("10.0.0.7")}, nil
		case "sneaky.example":
			return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("169.254.169.254")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	}
	schemes := []string{"https", "http", "ssh", "file"}
	cases := []struct {
		url    string
		policy endpoint.Policy
		want   string // substring of the error; empty means allowed
	}{
		{"https://github.com/org/repo.git", endpoint.Policy{}, ""},
		{"file:///srv/git/inventory.git", endpoint.Policy{}, ""},
		{"https://127.0.0.1/repo.git", endpoint.Policy{}, "loopback"},
		{"http://localhost:3000/repo.git", endpoint.Policy{}, "not allowed"},
		{"http://127.0.0.1:3000/repo.git", endpoint.Policy{AllowLoopback: true}, ""},
		{"http://169.254.169.254/latest", endpoint.Policy{AllowPrivate: true}, "link-local"},
		{"http://metadata.google.internal/", endpoint.Policy{AllowPrivate: true}, "metadata"},
		{"https://git.svc.cluster.local/repo.git", endpoint.Policy{}, "--allow-private-sinks"},
		{"https://git.svc.cluster.local/repo.git", endpoint.Policy{AllowPrivate: true}, ""},
		{"https://sneaky.example/repo.git", endpoint.Policy{AllowPrivate: true}, "169.254.169.254"},
		{"https://100.64.1.1/repo.git", endpoint.Policy{AllowPrivate: true}, "reserved range"},
		{"ftp://example.com/x", endpoint.Policy{}, "scheme"},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			tc.policy.Lookup = lookup
			err := tc.policy.CheckURL(context.Background(), tc.url, schemes...)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want allowed, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want an error mentioning %q, got %v", tc.want, err)
			}
		})
	}
}
