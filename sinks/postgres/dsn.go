package postgres

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// fileKeys are the DSN settings that make libpq-compatible clients read a
// file of the operator's (a client key or certificate, a password file, a
// service file) or look one up by name. A DSN comes from a tenant's
// Secret: such a key would make the operator read its own files and, for
// a client key, present it to a server of the tenant's choosing.
var fileKeys = []string{"sslkey", "sslcert", "sslrootcert", "sslcrl", "sslcrldir", "passfile", "service", "servicefile"}

var keyValueKey = regexp.MustCompile(`(?i)(?:^|\s)([a-z_]+)\s*=`)

// CheckDSN refuses a DSN that names a local file or a unix socket: the
// CA goes in the sink's tls block, the password in the DSN itself, and
// the server is reached over TCP through the endpoint guard. The error
// quotes no part of the DSN but the offending key.
func CheckDSN(dsn string) error {
	keys, hosts := dsnKeysAndHosts(dsn)
	for _, k := range keys {
		for _, f := range fileKeys {
			if strings.EqualFold(k, f) {
				return fmt.Errorf("the postgres DSN sets %s, which reads a file on the operator's disk: put the CA in the sink's tls block (caSecretRef) instead; client certificates, password and service files are not supported", f)
			}
		}
	}
	for _, h := range hosts {
		if strings.HasPrefix(h, "/") || strings.HasPrefix(h, "@") {
			return fmt.Errorf("the postgres DSN names a unix socket (%s): a sink reaches its server over TCP only", h)
		}
	}
	return nil
}

// dsnKeysAndHosts lists the setting names and host values of a URL or
// key=value DSN.
func dsnKeysAndHosts(dsn string) (keys, hosts []string) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		// The authority by hand: a socket path in it (%2F…) does not parse
		// as a URL host.
		rest := dsn[strings.Index(dsn, "://")+3:]
		authority, query, _ := strings.Cut(rest, "?")
		if i := strings.IndexByte(authority, '/'); i >= 0 {
			authority = authority[:i]
		}
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			authority = authority[at+1:]
		}
		for _, h := range strings.Split(authority, ",") {
			if unescaped, err := url.PathUnescape(h); err == nil {
				hosts = append(hosts, unescaped)
			} else {
				hosts = append(hosts, h)
			}
		}
		values, _ := url.ParseQuery(query)
		for k, vs := range values {
			keys = append(keys, k)
			if strings.EqualFold(k, "host") {
				for _, v := range vs {
					hosts = append(hosts, strings.Split(v, ",")...)
				}
			}
		}
		return keys, hosts
	}
	for _, m := range keyValueKey.FindAllStringSubmatchIndex(dsn, -1) {
		k := dsn[m[2]:m[3]]
		keys = append(keys, k)
		if strings.EqualFold(k, "host") {
			v := strings.TrimLeft(dsn[m[1]:], " \t'")
			if end := strings.IndexAny(v, " \t'"); end >= 0 {
				v = v[:end]
			}
			hosts = append(hosts, strings.Split(v, ",")...)
		}
	}
	return keys, hosts
}
