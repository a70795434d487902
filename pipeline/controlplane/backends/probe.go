package backends

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Probe failure reasons.
const (
	ReasonSecretFailed = "SecretResolveFailed"
	ReasonTestFailed   = "ConnectionTestFailed"
	probeTimeout       = 15 * time.Second
)

// prober is a backend that can test its connection.
type prober interface {
	Probe(ctx context.Context) error
}

// Probe builds a throwaway backend for sink and tests its connection. On
// success it returns a message for the ConnectionVerified condition; on
// failure a reason and an error that says what to fix.
func (r Registry) Probe(ctx context.Context, c client.Reader, sink client.Object) (msg, reason string, err error) {
	family, typ := Kind(sink)
	factory := r[family+"/"+typ]
	if factory == nil {
		return "", ReasonTestFailed, errNotImplemented(sinkKind(typ))
	}
	creds, err := ReadCredentials(ctx, c, sink)
	if err != nil {
		return "", ReasonSecretFailed, err
	}
	b, err := factory(ctx, sink, creds, "")
	if err != nil {
		return "", ReasonTestFailed, err
	}
	defer closeBackend(b)
	p, ok := b.(prober)
	if !ok {
		return "", ReasonTestFailed, errNotImplemented(typ + " probes")
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if err := p.Probe(pctx); err != nil {
		return "", ReasonTestFailed, err
	}
	return probeMessages[typ], "", nil
}

var probeMessages = map[string]string{
	"postgres": "PostgreSQL ping succeeded",
	"nats":     "NATS JetStream account info request succeeded",
	"kafka":    "Kafka broker metadata request succeeded",
}

// errNotImplemented says that this version has no backend (or no probe)
// for what.
func errNotImplemented(what string) error {
	return fmt.Errorf("%s are not implemented in this version of Kollect", what)
}
