package mongodb

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"kollect.dev/kollect/sinks"
)

// Server error codes the sink acts on.
const (
	codeUnauthorized          = 13
	codeAuthenticationFailed  = 18
	codeNamespaceExists       = 48
	codeIndexOptionsConflict  = 85
	codeIndexKeySpecsConflict = 86
)

// documentCodes are write errors about one document's content: the row is
// set aside and the rest of the export goes through. BadValue is what
// FerretDB answers for a key with a '.' or a leading '$'; MongoDB before
// 5.0 answers 52, 55 or 57; the others are size and index-key limits.
var documentCodes = []int{2, 52, 55, 57, 10334, 17280, 17419, 17420}

func refusesDocument(code int) bool { return slices.Contains(documentCodes, code) }

// hasCode reports whether err is a server error with code.
func hasCode(err error, code int) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorCode(code)
}

// classify turns a driver error into a message that says what to fix, with
// credentials removed, marked permanent when retrying cannot help.
func (s *Sink) classify(op string, err error) error {
	if errors.Is(err, sinks.ErrPermanent) {
		return err
	}
	msg := sinks.Redact(err.Error(), s.secrets...)
	if refused := s.refused.Load(); refused != nil && strings.Contains(msg, "server selection") {
		return sinks.Permanent(fmt.Errorf("mongodb %s: %s", op, sinks.Redact((*refused).Error(), s.secrets...)))
	}
	switch {
	case hasCode(err, codeAuthenticationFailed) || strings.Contains(msg, "auth error"):
		return sinks.Permanent(fmt.Errorf("mongodb %s: authentication failed; check the user, password and authSource in the URI Secret (%s)", op, msg))
	case hasCode(err, codeUnauthorized):
		return sinks.Permanent(fmt.Errorf("mongodb %s: not authorized; grant the URI's user readWrite on database %s (and createCollection, createIndex in mode ensure) (%s)",
			op, s.cfg.Database, msg))
	case mongo.IsDuplicateKeyError(err):
		return sinks.Permanent(fmt.Errorf("mongodb %s: a document that this sink did not write holds the same inventory, cluster, target and UID as a row; remove it from %s.%s (%s)",
			op, s.cfg.Database, s.cfg.Collection, msg))
	}
	if terr := sinks.Transport("mongodb", op, "a server", msg, err); terr != nil {
		return terr
	}
	if mongo.IsTimeout(err) || strings.Contains(msg, "server selection") {
		return fmt.Errorf("mongodb %s: no server reachable (%s)", op, msg)
	}
	return fmt.Errorf("mongodb %s: %s", op, msg)
}

// uriOptions a sink refuses: each would make the operator read a file of
// its own filesystem, fetch credentials from a cloud metadata endpoint, or
// dial through a proxy the endpoint guard does not see.
var uriOptions = []string{"tlscafile", "tlscertificatekeyfile", "tlscertificatekeyfilepassword", "sslcertificateauthorityfile",
	"sslclientcertificatekeyfile", "sslclientcertificatekeypassword", "proxyhost", "proxyport", "proxyusername", "proxypassword"}

// authMechanisms a sink accepts: the password mechanisms. MONGODB-AWS,
// MONGODB-OIDC, MONGODB-X509 and GSSAPI read credentials from the
// operator's environment, files or metadata endpoints.
var authMechanisms = []string{"scram-sha-1", "scram-sha-256", "plain"}

// checkURI refuses URIs that reach outside the sink's own credentials, and
// returns what redaction must remove from messages: the URI and its
// password.
func checkURI(uri string) ([]string, error) {
	if uri == "" {
		return nil, errors.New("the MongoDB URI is empty")
	}
	if !strings.HasPrefix(uri, "mongodb://") && !strings.HasPrefix(uri, "mongodb+srv://") {
		return nil, errors.New("the MongoDB URI must start with mongodb:// or mongodb+srv://")
	}
	secrets := []string{uri}
	rest := uri[strings.Index(uri, "://")+3:]
	if at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); at >= 0 {
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok && pw != "" {
			secrets = append(secrets, pw)
			if dec, err := url.PathUnescape(pw); err == nil && dec != pw {
				secrets = append(secrets, dec)
			}
		}
	}
	_, query, _ := strings.Cut(rest, "?")
	values, err := url.ParseQuery(query)
	if err != nil {
		return secrets, fmt.Errorf("the MongoDB URI's options do not parse: %s", sinks.Redact(err.Error(), secrets...))
	}
	for k, vs := range values {
		key := strings.ToLower(k)
		if slices.Contains(uriOptions, key) {
			return secrets, fmt.Errorf("the MongoDB URI option %s is not allowed: put a CA in tls.caSecretRef, and let the endpoint guard see the server dialled", k)
		}
		if key == "authmechanism" {
			for _, v := range vs {
				if !slices.Contains(authMechanisms, strings.ToLower(v)) {
					return secrets, fmt.Errorf("authMechanism %s is not allowed: use SCRAM-SHA-256, SCRAM-SHA-1 or PLAIN with a user and password in the URI", v)
				}
			}
		}
	}
	return secrets, nil
}
