package objectstore

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
)

// Endpoint is a parsed object-store endpoint.
type Endpoint struct {
	// BaseURL is a custom service endpoint (scheme://host[:port]), ""
	// for the provider's default.
	BaseURL string
	Bucket  string
	Prefix  string
}

// ParseEndpoint reads the endpoint forms upstream accepts:
// scheme://bucket[/prefix] for the provider's own endpoint (s3://, gs://,
// azblob://), https://host[:port]/bucket[/prefix] for a custom endpoint
// (path-style), or bare bucket[/prefix]. gs://bucket/prefix is a bucket
// and a prefix (upstream mis-parses it).
func ParseEndpoint(raw string, schemes ...string) (Endpoint, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return Endpoint{}, errors.New("spec.endpoint is empty: name the bucket (" + strings.Join(schemes, "://bucket/prefix, ") + "://bucket/prefix or https://host/bucket/prefix)")
	}
	scheme, rest, found := strings.Cut(raw, "://")
	if !found {
		scheme, rest = "", raw
	}
	var e Endpoint
	switch scheme {
	case "http", "https":
		u, err := url.Parse(raw)
		if err != nil {
			return e, fmt.Errorf("spec.endpoint %q: %w", raw, err)
		}
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return e, fmt.Errorf("spec.endpoint %q: credentials, queries and fragments do not belong in the endpoint", raw)
		}
		e.BaseURL = u.Scheme + "://" + u.Host
		rest = strings.TrimPrefix(u.Path, "/")
	case "":
	default:
		ok := false
		for _, s := range schemes {
			ok = ok || s == scheme
		}
		if !ok {
			return e, fmt.Errorf("spec.endpoint %q: scheme %s:// is not one this sink type reads (%s://, https:// or a bare bucket)", raw, scheme, strings.Join(schemes, "://, "))
		}
	}
	e.Bucket, e.Prefix, _ = strings.Cut(strings.Trim(rest, "/"), "/")
	e.Prefix = strings.Trim(e.Prefix, "/")
	if e.Bucket == "" {
		return e, fmt.Errorf("spec.endpoint %q names no bucket", raw)
	}
	return e, nil
}

// FromSpec is the part of a Config the sink spec decides (the bucket is
// opened by the type's opener).
func FromSpec(s *kollectv1alpha1.KollectSnapshotSink, e Endpoint) Config {
	cfg := Config{Prefix: e.Prefix, Cluster: s.Spec.Cluster, PathTemplate: s.Spec.PathTemplate}
	if st := s.Spec.Serialization; st != nil {
		cfg.Format, cfg.Compression = st.Format, st.Compression
	}
	if store := s.Spec.ObjectStore; store != nil {
		if store.Format != "" && (cfg.Format == "" || cfg.Format == JSON) {
			cfg.Format = store.Format // objectStore.format: parquet wins over the default json
		}
		cfg.HotAttributes = store.HotAttributes
	}
	if l := s.Spec.Layout; l != nil {
		cfg.Layout = l.Mode
		if l.PathTemplate != "" {
			cfg.PathTemplate = l.PathTemplate
		}
	}
	return cfg
}

// first returns the first non-empty value of keys in data.
func first(data map[string][]byte, keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(string(data[k])); v != "" {
			return v
		}
	}
	return ""
}
