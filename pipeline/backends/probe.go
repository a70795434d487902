package backends

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"kollect.dev/kollect/sinks"
)

// Probe failure reasons.
const (
	ReasonSecretFailed = "SecretResolveFailed"
	ReasonTestFailed   = "ConnectionTestFailed"
	// ReasonAmbientRefused: the sink holds no key and may not use the
	// operator's own cloud identity.
	ReasonAmbientRefused = "AmbientCredentialsRefused"
	probeTimeout         = 15 * time.Second
)

// Probe builds a throwaway backend for sink and tests its connection. On
// success it returns the type's Verified message for the ConnectionVerified
// condition; on failure a reason and an error that says what to fix.
func (r *Registry) Probe(ctx context.Context, c client.Reader, sink client.Object) (msg, reason string, err error) {
	t, err := r.Type(sink)
	if err != nil {
		return "", ReasonTestFailed, err
	}
	creds, err := r.credentials(ctx, c, sink)
	if err != nil {
		return "", ReasonSecretFailed, err
	}
	// A probe shares the server's pool with the exports (sinks.Clients):
	// probing a hundred sinks of one server opens no pool of its own.
	// It writes nothing, so it carries no writer id.
	env := r.env(creds)
	env.Writer, env.Clients = "", r.Clients
	b, err := t.Build(ctx, sink, creds, env)
	if errors.Is(err, sinks.ErrAmbientRefused) {
		return "", ReasonAmbientRefused, err
	}
	if err != nil {
		return "", ReasonTestFailed, err
	}
	defer closeBackend(b)
	p, ok := b.(sinks.Prober)
	if !ok {
		return "", ReasonTestFailed, errNotImplemented(t.Name + " probes")
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if err := p.Probe(pctx); err != nil {
		return "", ReasonTestFailed, err
	}
	return t.Verified, "", nil
}
