package bigquery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"cloud.google.com/go/bigquery"
	"golang.org/x/oauth2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"k8s.io/utils/clock"

	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/gcpauth"
)

// Config is a BigQuery sink's plain configuration.
type Config struct {
	// Clock stamps what the sink writes: row and message times, commit
	// times (nil: the real clock).
	Clock                   clock.PassiveClock
	Project, Dataset, Table string
	// Location runs jobs in a region (bigquery.location), or "" for the
	// dataset's.
	Location string
	// Cluster scopes every row this sink writes (spec.cluster).
	Cluster string
	// Existing never creates the table (provisioning.mode existing).
	Existing bool
	// Key is a service-account key (credentials.json); no other key type
	// is accepted. Without it the sink uses Application Default
	// Credentials when Ambient, sends nothing when NoAuth, and is refused
	// otherwise.
	Key []byte
	// Ambient allows the operator's own identity when there is no Key.
	Ambient bool
	// NoAuth sends requests without credentials (an emulator).
	NoAuth bool
	// Endpoint overrides the API root (https://bigquery.googleapis.com).
	Endpoint string
	// HTTP carries every request, token requests included: the operator
	// passes a client that dials only what the endpoint guard allows. nil
	// is http.DefaultClient.
	HTTP *http.Client
	// Transport names what HTTP carries beyond Endpoint (the CA bundle,
	// skipped verification): sinks share a table's client (Clients) only
	// when their Transport is the same.
	Transport string
	// Clients, when set, shares one client and batch queue among the
	// sinks of this process that write one table with the same
	// credentials and Transport, and the table's statement slots (see
	// dmlPerTable) among all that write it.
	Clients *sinks.Clients
}

// Sink writes inventories into one table.
type Sink struct {
	cfg Config
	// t is the table this sink writes, shared with the sinks of this
	// process that write it with the same credentials.
	t       *table
	release func()
}

// Sink is a Backend with these optional capabilities.
var (
	_ sinks.Backend = (*Sink)(nil)
	_ sinks.Prober  = (*Sink)(nil)
	_ sinks.Closer  = (*Sink)(nil)
	_ sinks.Keeper  = (*Sink)(nil)
)

// Scope is the OAuth scope the sink's credentials are used with.
const Scope = bigquery.Scope

// New validates cfg and acquires the table's client; nothing is sent
// until the first export or probe (except, with ADC, finding the default
// credentials).
func New(ctx context.Context, cfg Config) (*Sink, error) {
	cfg.Clock = sinks.OrRealClock(cfg.Clock)
	for what, v := range map[string]string{"project": cfg.Project, "dataset": cfg.Dataset, "table": cfg.Table} {
		if err := validName(what, v); err != nil {
			return nil, sinks.Permanent(err)
		}
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	v, release, err := cfg.Clients.Acquire("bigquery", tableKey(cfg), func() (any, func(), error) {
		t, err := openTable(ctx, cfg, hc)
		if err != nil {
			return nil, nil, err
		}
		return t, t.close, nil
	})
	if err != nil {
		return nil, err
	}
	return &Sink{cfg: cfg, t: v.(*table), release: release}, nil
}

// newClient builds a client that authenticates as cfg says.
func newClient(ctx context.Context, cfg Config, hc *http.Client) (*bigquery.Client, error) {
	client := hc
	if !cfg.NoAuth {
		source, err := gcpauth.TokenSource(ctx, hc, gcpauth.Source{Key: cfg.Key, Ambient: cfg.Ambient}, Scope)
		if err != nil {
			return nil, sinks.Permanent(err)
		}
		client = &http.Client{Transport: &oauth2.Transport{Source: source, Base: hc.Transport}, Timeout: hc.Timeout}
	}
	opts := []option.ClientOption{option.WithHTTPClient(client)}
	if cfg.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(cfg.Endpoint+"/bigquery/v2/"))
	}
	c, err := bigquery.NewClient(ctx, cfg.Project, opts...)
	if err != nil {
		return nil, sinks.Permanent(fmt.Errorf("bigquery client: %w", err))
	}
	c.Location = cfg.Location
	return c, nil
}

// Close lets go of the table (the last sink to do so closes its client).
func (s *Sink) Close() { s.release() }

// Probe reads the dataset, dry-runs a query and checks the table: created
// in mode ensure, present with the expected columns in mode existing.
func (s *Sink) Probe(ctx context.Context) error {
	if err := s.datasetExists(ctx); err != nil {
		return err
	}
	q := s.t.client.Query("SELECT 1")
	q.DryRun = true
	if _, err := q.Run(ctx); err != nil {
		return s.classify("dry-run query", err)
	}
	return s.t.prepare(ctx)
}

func (s *Sink) datasetExists(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := s.t.client.Dataset(s.cfg.Dataset).Metadata(ctx); err != nil {
		if notFound(err) {
			return sinks.Permanent(fmt.Errorf("dataset %s.%s does not exist (or these credentials cannot see it); Kollect does not create datasets", s.cfg.Project, s.cfg.Dataset))
		}
		return s.classify("read dataset", err)
	}
	return nil
}

// missingColumns lists the columns of Schema a table lacks.
func missingColumns(have bigquery.Schema) []string {
	var out []string
	for _, want := range Schema() {
		if !slices.ContainsFunc(have, func(f *bigquery.FieldSchema) bool { return f.Name == want.Name && f.Type == want.Type }) {
			out = append(out, want.Name+" "+string(want.Type))
		}
	}
	return out
}

// KeepsTargets reports that a full export can leave kept targets' rows
// as the table holds them: every row names its target.
func (s *Sink) KeepsTargets() bool { return true }

func notFound(err error) bool { return hasStatus(err, http.StatusNotFound) }

func hasStatus(err error, code int) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == code
}

// done is iterator.Done, for readers of a result.
var done = iterator.Done
