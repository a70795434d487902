package backends

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/model/endpoint"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/git"
	"kollect.dev/kollect/sinks/kafka"
	"kollect.dev/kollect/sinks/nats"
	"kollect.dev/kollect/sinks/postgres"
)

// ReplayAnnotation on a KollectEventSink asks every binding to publish
// every row once, instead of only what differs from what the stream holds.
// Change its value to ask again.
const ReplayAnnotation = "kollect.dev/replay"

// Factory builds the backend of one sink from the sink object, its
// resolved credentials and a state directory of its own.
type Factory func(ctx context.Context, sink client.Object, creds Credentials, stateDir string) (sinks.Backend, error)

// Registry maps "<family>/<type>" (snapshot/git, database/postgres,
// event/nats, ...) to factories.
type Registry map[string]Factory

// Kind returns a sink object's family and effective type.
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
	return fmt.Sprintf("%s/%s/%d/%s/%s", family, typ, sink.GetGeneration(), creds.Version, sink.GetAnnotations()[ReplayAnnotation])
}

// Default is every backend this build implements, each dialling only what
// policy allows.
func Default(policy endpoint.Policy) Registry {
	return Registry{
		"snapshot/git":      gitFactory(policy),
		"database/postgres": postgresFactory(policy),
		"event/nats":        natsFactory(policy),
		"event/kafka":       kafkaFactory(policy),
	}
}

func gitFactory(policy endpoint.Policy) Factory {
	return func(ctx context.Context, obj client.Object, creds Credentials, dir string) (sinks.Backend, error) {
		s := obj.(*kollectv1alpha1.KollectSnapshotSink)
		url, _, err := git.Endpoint(&s.Spec)
		if err != nil {
			return nil, err
		}
		schemes := []string{"https", "http", "ssh"}
		if policy.AllowLoopback {
			schemes = append(schemes, "file") // a repository on the operator's own disk: development only
		} else if strings.HasPrefix(url, "file://") {
			return nil, sinks.Permanent(errors.New("file:// remotes name a repository on the operator's own disk and are refused; " +
				"use an https:// or ssh:// remote (file:// is only for local development, with --dev-allow-loopback-sinks)"))
		}
		if err := policy.CheckURL(ctx, url, schemes...); err != nil {
			return nil, err
		}
		cfg, err := git.FromSink(s, creds.Data, dir)
		if err != nil {
			return nil, err
		}
		g, err := git.New(cfg)
		if err != nil {
			return nil, err
		}
		return sinks.Whole(g), nil
	}
}

func postgresFactory(policy endpoint.Policy) Factory {
	return func(ctx context.Context, obj client.Object, creds Credentials, _ string) (sinks.Backend, error) {
		s := obj.(*kollectv1alpha1.KollectDatabaseSink)
		cfg, err := postgres.FromSpec(&s.Spec, creds.Data, creds.CA)
		if err != nil {
			return nil, err
		}
		cfg.Dial = GuardedDial(policy)
		return postgres.New(cfg)
	}
}

func natsFactory(policy endpoint.Policy) Factory {
	return func(ctx context.Context, obj client.Object, creds Credentials, _ string) (sinks.Backend, error) {
		s := obj.(*kollectv1alpha1.KollectEventSink)
		cfg := nats.FromSpec(&s.Spec, creds.Data, creds.CA)
		cfg.Replay = strings.TrimSpace(s.Annotations[ReplayAnnotation]) != ""
		if err := policy.CheckURL(ctx, cfg.URL, "nats", "tls", "ws", "wss"); err != nil {
			return nil, err
		}
		cfg.Dial = GuardedDial(policy)
		return nats.New(cfg)
	}
}

func kafkaFactory(policy endpoint.Policy) Factory {
	return func(ctx context.Context, obj client.Object, creds Credentials, _ string) (sinks.Backend, error) {
		s := obj.(*kollectv1alpha1.KollectEventSink)
		cfg := kafka.FromSpec(&s.Spec, creds.Data, creds.CA)
		cfg.Replay = strings.TrimSpace(s.Annotations[ReplayAnnotation]) != ""
		cfg.Dial = GuardedDial(policy)
		return kafka.New(cfg)
	}
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
