package backends

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/bigquery"
	"kollect.dev/kollect/sinks/git"
	"kollect.dev/kollect/sinks/mongodb"
	"kollect.dev/kollect/sinks/postgres"
)

func databaseSpec(o client.Object) *kollectv1alpha1.KollectDatabaseSinkSpec {
	return &o.(*kollectv1alpha1.KollectDatabaseSink).Spec
}

func postgresType() Type {
	return Type{Family: "database", Name: "postgres", Admit: admitConnectionString, Preview: previewPostgres, Verified: "PostgreSQL ping succeeded",
		Secret: func(o client.Object) *kollectv1alpha1.SecretReference {
			return postgres.CredentialsRef(databaseSpec(o))
		},
		Build: func(_ context.Context, obj client.Object, creds Credentials, env Env) (sinks.Backend, error) {
			cfg, err := postgres.FromSpec(databaseSpec(obj), creds.Data, creds.CA)
			if err != nil {
				return nil, err
			}
			cfg.Dial, cfg.Clients, cfg.Clock = GuardedDial(env.Policy), env.Clients, env.Clock
			return postgres.New(cfg)
		}}
}

func mongodbType() Type {
	return Type{Family: "database", Name: "mongodb", Admit: admitConnectionString, Preview: previewMongoDB, Verified: "MongoDB ping succeeded",
		Secret: func(o client.Object) *kollectv1alpha1.SecretReference { return mongodb.CredentialsRef(databaseSpec(o)) },
		Build: func(_ context.Context, obj client.Object, creds Credentials, env Env) (sinks.Backend, error) {
			cfg, err := mongodb.FromSpec(databaseSpec(obj), creds.Data, creds.CA)
			if err != nil {
				return nil, err
			}
			cfg.Dial, cfg.Clients, cfg.Clock = GuardedDial(env.Policy), env.Clients, env.Clock
			return mongodb.New(cfg)
		}}
}

// EmulatorHost is the environment variable that points every BigQuery
// sink at an emulator (host:port, plain HTTP, no credentials), as
// upstream reads it.
const EmulatorHost = "BIGQUERY_EMULATOR_HOST"

// bigqueryType writes through the BigQuery API, at spec.endpoint when set
// (a private endpoint), with the Secret's service-account key or
// Application Default Credentials; every request, token requests
// included, dials through the endpoint guard.
func bigqueryType() Type {
	return Type{Family: "database", Name: "bigquery", Admit: admitBigQuery, Preview: previewBigQuery, Verified: "BigQuery dataset metadata and dry-run query succeeded",
		Secret: func(o client.Object) *kollectv1alpha1.SecretReference {
			return bigquery.CredentialsRef(databaseSpec(o))
		},
		Build: func(ctx context.Context, obj client.Object, creds Credentials, env Env) (sinks.Backend, error) {
			s := obj.(*kollectv1alpha1.KollectDatabaseSink)
			cfg, err := bigquery.FromSpec(&s.Spec, creds.Data)
			if err != nil {
				return nil, err
			}
			switch host := strings.TrimSpace(os.Getenv(EmulatorHost)); {
			case host != "":
				cfg.Endpoint, cfg.NoAuth = "http://"+host, true
			case s.Spec.Endpoint != "":
				cfg.Endpoint = strings.TrimSuffix(s.Spec.Endpoint, "/")
				if strings.HasPrefix(cfg.Endpoint, "http://") && s.Annotations[git.AllowPlainHTTPCredentials] != "true" {
					return nil, sinks.Permanent(fmt.Errorf("credentials would travel over plain http to %s: use https, or set the annotation %s: \"true\" on the sink (development only)",
						cfg.Endpoint, git.AllowPlainHTTPCredentials))
				}
			}
			if cfg.Endpoint != "" {
				if err := env.Policy.CheckURL(ctx, cfg.Endpoint, "https", "http"); err != nil {
					return nil, err
				}
			}
			insecure := s.Spec.TLS != nil && s.Spec.TLS.InsecureSkipVerify
			cfg.HTTP, err = sinks.HTTPClient(GuardedDial(env.Policy), creds.CA, insecure)
			if err != nil {
				return nil, sinks.Permanent(err)
			}
			ca := sha256.Sum256(creds.CA)
			cfg.Transport = fmt.Sprintf("ca=%x insecure=%t", ca, insecure)
			cfg.Ambient, cfg.Clients, cfg.Clock = env.Ambient, env.Clients, env.Clock
			b, err := bigquery.New(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return b, nil
		}}
}
