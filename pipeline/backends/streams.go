package backends

import (
	"context"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/events"
	"kollect.dev/kollect/sinks/kafka"
	"kollect.dev/kollect/sinks/nats"
)

func natsType() Type {
	return Type{Family: "event", Name: "nats", Admit: admitNATS, Preview: previewNATS, Verified: "NATS JetStream account info request succeeded",
		Secret: func(o client.Object) *kollectv1alpha1.SecretReference {
			return nats.CredentialsRef(&o.(*kollectv1alpha1.KollectEventSink).Spec)
		},
		Build: func(ctx context.Context, obj client.Object, creds Credentials, env Env) (sinks.Backend, error) {
			s := obj.(*kollectv1alpha1.KollectEventSink)
			cfg := nats.FromSpec(&s.Spec, creds.Data, creds.CA)
			cfg.Envelope, cfg.MaxAge = envelopes(s, env), env.NATSStreamMaxAge
			cfg.Replay = strings.TrimSpace(s.Annotations[ReplayAnnotation]) != ""
			cfg.Writer, cfg.Adopt = env.Writer, s.Annotations[sinks.AdoptAnnotation]
			if err := env.Policy.CheckURL(ctx, cfg.URL, "nats", "tls", "ws", "wss"); err != nil {
				return nil, err
			}
			cfg.Dial, cfg.Clients, cfg.Clock = GuardedDial(env.Policy), env.Clients, env.Clock
			return nats.New(cfg)
		}}
}

func kafkaType() Type {
	return Type{Family: "event", Name: "kafka", Admit: admitKafka, Preview: previewKafka, Verified: "Kafka broker metadata request succeeded",
		Secret: func(o client.Object) *kollectv1alpha1.SecretReference {
			return kafka.CredentialsRef(&o.(*kollectv1alpha1.KollectEventSink).Spec)
		},
		Build: func(_ context.Context, obj client.Object, creds Credentials, env Env) (sinks.Backend, error) {
			s := obj.(*kollectv1alpha1.KollectEventSink)
			cfg := kafka.FromSpec(&s.Spec, creds.Data, creds.CA)
			cfg.Envelope = envelopes(s, env)
			cfg.Replay = strings.TrimSpace(s.Annotations[ReplayAnnotation]) != ""
			cfg.Writer, cfg.Adopt = env.Writer, s.Annotations[sinks.AdoptAnnotation]
			cfg.Dial, cfg.Clients, cfg.Read, cfg.Clock = GuardedDial(env.Policy), env.Clients, env.readBack("kafka"), env.Clock
			return kafka.New(cfg)
		}}
}

// envelopes reports whether an event sink publishes upstream's envelopes:
// its spec.messages, else the operator's default.
func envelopes(s *kollectv1alpha1.KollectEventSink, env Env) bool {
	mode := s.Spec.Messages
	if mode == "" {
		mode = env.EventMessages
	}
	return mode == events.Envelope
}
