package backends

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// ReplayAnnotation on a KollectEventSink asks every binding to publish
// every row once, instead of only what differs from what the stream holds.
// Change its value to ask again.
const ReplayAnnotation = "kollect.dev/replay"

// Type is everything Kollect knows about one sink type: the one place a
// backend is registered. The operator (exports, probes, cleanup), the
// webhooks (admission, and which Secret a sink reads), status.preview and
// the CLI (--sink) all go through it, so adding a backend is its package,
// one Type in Types and its name in the API's enum
// (TestEveryBackendIsRegisteredWhole fails on a piece left out).
//
// A built backend implements sinks.Backend. It may implement
// sinks.Prober (the connection test behind ConnectionVerified; without it
// the sink's probe fails saying so), sinks.Closer (releases connections
// when the backend is replaced or its inventory goes), sinks.PartWanter
// and sinks.Keeper. The engine tells backends apart by the id the Cache
// gives each one it builds, never by comparing them.
type Type struct {
	// Family is snapshot, database or event; Name the spec.type value.
	Family, Name string
	// Secret names the Secret the sink's credentials come from, or nil
	// (none, or the SDK's default credential chain).
	Secret func(sink client.Object) *kollectv1alpha1.SecretReference
	// Build makes the backend of one sink from its resolved credentials.
	// It checks every address it will dial against env.Policy.
	Build func(ctx context.Context, sink client.Object, creds Credentials, env Env) (sinks.Backend, error)
	// Verified is the ConnectionVerified message after a probe succeeded:
	// what the probe checked.
	Verified string
	// Admit is the admission webhook's checks of the type's own fields:
	// warnings, and problems that refuse the sink. The checks every sink
	// of the family shares run beside it.
	Admit func(sink client.Object, check EndpointCheck) (warnings, problems []string)
	// Preview fills status.preview with what the sink would write for the
	// sample inventory: paths, a table's DDL, a topic.
	Preview func(sink client.Object, snap *rows.Snapshot, p *kollectv1alpha1.SinkPreviewStatus) error
}

// Find returns the Type of sink among types, or an error saying that this
// version has no such backend.
func Find(types []Type, sink client.Object) (Type, error) {
	family, typ := Kind(sink)
	for _, t := range types {
		if t.Family == family && t.Name == typ {
			return t, nil
		}
	}
	return Type{}, errNotImplemented(sinkKind(typ))
}

// Env is what a backend is built with besides its sink and credentials.
type Env struct {
	// Policy is the endpoint guard: the addresses a backend may dial.
	Policy endpoint.Policy
	// StateDir is a directory of the backend's own, or "" for a throwaway
	// backend (a probe).
	StateDir string
	// SharedDir holds state the backends of one server share, in
	// directories the backends name by their server (one Git mirror per
	// repository), or "" for none.
	SharedDir string
	// Ambient lets a cloud backend without a key use the operator's own
	// identity (the SDK's default chain). Without it such a backend is
	// refused before it sends anything.
	Ambient bool
	// Writer is this operator's writer id (Registry.Writer), for backends
	// that record it themselves (event streams, in message headers).
	Writer string
	// EventMessages is what an event sink's messages carry when its
	// spec.messages is unset (Registry.EventMessages).
	EventMessages string
	// NATSStreamMaxAge is the maximum age of the streams NATS sinks create
	// (Registry.NATSStreamMaxAge).
	NATSStreamMaxAge time.Duration
	// Clients shares connection pools and broker clients among the
	// backends of one server (nil: each backend opens its own, as a probe
	// does).
	Clients *sinks.Clients
	// ReadBack, when set, is told the bytes the backend reads back from
	// its server to learn what it holds (a Kafka topic's records).
	ReadBack func(sinkType string, bytes int)
	// Clock stamps what the backend writes (Registry.Clock; nil: the real
	// clock).
	Clock clock.PassiveClock
}

// readBack is ReadBack for one sink type, or nil.
func (e Env) readBack(sinkType string) func(int) {
	if e.ReadBack == nil {
		return nil
	}
	return func(n int) { e.ReadBack(sinkType, n) }
}

// Types are the backends of this build, one line each.
func Types() []Type {
	return []Type{
		gitType(),
		gitlabType(),
		s3Type(),
		gcsType(),
		azureType(),
		postgresType(),
		mongodbType(),
		bigqueryType(),
		natsType(),
		kafkaType(),
	}
}

// Registry finds the Type of a sink object and builds its backend with
// the endpoint policy of this operator.
type Registry struct {
	Policy endpoint.Policy
	// AllowAmbient is the operator's consent to ambient credentials
	// (--allow-ambient-credentials); a sink gets them only when the scopes
	// of its namespace consent too.
	AllowAmbient bool
	// Writer is this operator's name in the writer records backends keep
	// per inventory (sinks.Claims): the UID of its cluster's kube-system
	// namespace unless --writer-id says otherwise; "" keeps no records.
	Writer string
	// EventMessages is what the messages of an event sink that does not set
	// spec.messages carry: perRow ("" too) or envelope, upstream's format
	// (--event-messages), so that a platform moving from upstream keeps its
	// consumers without editing every sink.
	EventMessages string
	// NATSStreamMaxAge is the maximum age of the messages of a stream a
	// NATS sink creates (--nats-stream-max-age; 0: no limit).
	NATSStreamMaxAge time.Duration
	// Clients are the connections every backend the cache builds shares
	// with the others of its server.
	Clients *sinks.Clients
	// ReadBack, when set, is told the bytes every backend the registry
	// builds reads back from its server (metrics); see Env.ReadBack.
	ReadBack func(sinkType string, bytes int)
	// Clock is the manager's, handed to every backend built (nil: the
	// real clock).
	Clock clock.PassiveClock
	types []Type
	// secrets reuses the Secrets read for backends for a few seconds.
	secrets *secretMemo
}

// Default is a registry of every backend this build implements, each
// dialling only what policy allows.
func Default(policy endpoint.Policy) *Registry {
	return New(policy, Types()...)
}

// New is a registry of the given types.
func New(policy endpoint.Policy, types ...Type) *Registry {
	r := &Registry{Policy: policy, Clients: &sinks.Clients{}, types: types}
	r.secrets = newSecretMemo(r.now)
	return r
}

// now reads the registry's clock, set after New by the manager.
func (r *Registry) now() time.Time { return sinks.OrRealClock(r.Clock).Now() }

// Names lists the registered types as family/name, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.types))
	for _, t := range r.types {
		out = append(out, t.Family+"/"+t.Name)
	}
	sort.Strings(out)
	return out
}

// Type returns the Type of a sink object, or an error saying that this
// version has no such backend.
func (r *Registry) Type(sink client.Object) (Type, error) { return Find(r.types, sink) }

// Build makes the backend of sink with its resolved credentials.
func (r *Registry) Build(ctx context.Context, sink client.Object, creds Credentials, stateDir string) (sinks.Backend, error) {
	t, err := r.Type(sink)
	if err != nil {
		return nil, err
	}
	env := r.env(creds)
	env.StateDir = stateDir
	return t.Build(ctx, sink, creds, env)
}

// env is what every backend the registry builds gets from it, whoever
// builds it (the cache, a probe, the command line): callers add only
// their own state directories and shared clients, so a setting added
// here reaches them all.
func (r *Registry) env(creds Credentials) Env {
	return Env{Policy: r.Policy, Ambient: creds.Ambient, Writer: r.Writer, EventMessages: r.EventMessages,
		NATSStreamMaxAge: r.NATSStreamMaxAge, ReadBack: r.ReadBack, Clock: r.Clock}
}

// Kind returns a sink object's family and effective type: a
// KollectSnapshotSink with spec.git and no type is a Git sink, as upstream
// reads it. This is the only place that rule lives.
func Kind(sink client.Object) (family, typ string) {
	switch s := sink.(type) {
	case *kollectv1alpha1.KollectSnapshotSink:
		typ = s.Spec.Type
		if typ == "" && s.Spec.Git != nil {
			typ = "git"
		}
		return "snapshot", typ
	case *kollectv1alpha1.KollectDatabaseSink:
		return "database", s.Spec.Type
	case *kollectv1alpha1.KollectEventSink:
		return "event", s.Spec.Type
	}
	return "", ""
}

// sinkKind names a sink type in messages ("postgres sinks").
func sinkKind(typ string) string {
	if typ == "" {
		typ = "untyped"
	}
	return typ + " sinks"
}

func fingerprint(sink client.Object, creds Credentials) string {
	family, typ := Kind(sink)
	a := sink.GetAnnotations()
	return fmt.Sprintf("%s/%s/%d/%s/%s/%t/%s", family, typ, sink.GetGeneration(), creds.Version, a[ReplayAnnotation], creds.Ambient, a[sinks.AdoptAnnotation])
}

// claimed makes b check and keep the writer record of each inventory it
// writes, when it keeps them (sinks.Claimed): so two operators that share
// a sink and an inventory name without distinct spec.cluster values
// refuse, loudly, instead of deleting each other's rows.
func (r *Registry) claimed(b sinks.Backend, sink client.Object) sinks.Backend {
	return sinks.Claimed(b, sinks.ClaimsOf(b), r.Writer, sink.GetAnnotations()[sinks.AdoptAnnotation])
}

// errNotImplemented says that this version has no backend (or no probe)
// for what.
func errNotImplemented(what string) error {
	return fmt.Errorf("%s are not implemented in this version of Kollect", what)
}

// GuardedDial dials through the endpoint policy, which checks the address
// actually connected to; a refusal is permanent (retrying cannot fix it).
func GuardedDial(policy endpoint.Policy) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := policy.DialContext(ctx, network, addr)
		if errors.Is(err, endpoint.ErrForbidden) {
			return nil, sinks.Permanent(err)
		}
		return c, err
	}
}
