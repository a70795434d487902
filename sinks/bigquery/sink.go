package bigquery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"cloud.google.com/go/bigquery"
	"golang.org/x/oauth2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"kollect.dev/kollect/pipeline/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/gcpauth"
)

// Config is a BigQuery sink's plain configuration.
type Config struct {
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
	// Clients, when set, shares the table's statement slots (see
	// dmlPerTable) among the sinks of this process that write it.
	Clients *sinks.Clients
}

// Sink writes inventories into one table.
type Sink struct {
	cfg    Config
	client *bigquery.Client

	// slots are the table's statement slots; release gives them back.
	slots   chan struct{}
	release func()

	mu       sync.Mutex
	prepared bool
	// abandoned are, per inventory, the jobs an export stopped waiting
	// for, closed once they ended (see abandonedFor).
	abandoned map[string]chan struct{}
	// writersReady is 1 once the writer table exists, -1 when the
	// credentials may not create it, 0 before the first try.
	writersReady int
}

var _ sinks.Backend = (*Sink)(nil)

// Scope is the OAuth scope the sink's credentials are used with.
const Scope = bigquery.Scope

// New validates cfg and builds a client; nothing is sent until the first
// export or probe (except, with ADC, finding the default credentials).
func New(ctx context.Context, cfg Config) (*Sink, error) {
	for what, v := range map[string]string{"project": cfg.Project, "dataset": cfg.Dataset, "table": cfg.Table} {
		if err := validName(what, v); err != nil {
			return nil, sinks.Permanent(err)
		}
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
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
	table := cfg.Endpoint + "\x00" + cfg.Project + "." + cfg.Dataset + "." + cfg.Table
	slots, release, err := cfg.Clients.Acquire("bigquery-table", table, func() (any, func(), error) {
		return make(chan struct{}, dmlPerTable), func() {}, nil
	})
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return &Sink{cfg: cfg, client: c, slots: slots.(chan struct{}), release: release, abandoned: map[string]chan struct{}{}}, nil
}

// Close releases the client and the table's slots.
func (s *Sink) Close() {
	_ = s.client.Close()
	s.release()
}

// Probe reads the dataset, dry-runs a query and checks the table: created
// in mode ensure, present with the expected columns in mode existing.
func (s *Sink) Probe(ctx context.Context) error {
	if err := s.datasetExists(ctx); err != nil {
		return err
	}
	q := s.client.Query("SELECT 1")
	q.DryRun = true
	if _, err := q.Run(ctx); err != nil {
		return s.classify("dry-run query", err)
	}
	return s.prepare(ctx)
}

func (s *Sink) datasetExists(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := s.client.Dataset(s.cfg.Dataset).Metadata(ctx); err != nil {
		if notFound(err) {
			return sinks.Permanent(fmt.Errorf("dataset %s.%s does not exist (or these credentials cannot see it); Kollect does not create datasets", s.cfg.Project, s.cfg.Dataset))
		}
		return s.classify("read dataset", err)
	}
	return nil
}

// callTimeout bounds one API call and the client's own retries of it (a
// refused connection is retried until the context ends): the binding's
// back-off and circuit breaker take over from there.
const callTimeout = 15 * time.Second

// prepare creates the table once (mode ensure), or checks its columns
// (mode existing).
func (s *Sink) prepare(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prepared {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	t := s.client.Dataset(s.cfg.Dataset).Table(s.cfg.Table)
	if !s.cfg.Existing {
		err := t.Create(ctx, &bigquery.TableMetadata{
			Schema:           Schema(),
			TimePartitioning: &bigquery.TimePartitioning{Type: bigquery.DayPartitioningType, Field: "exported_at"},
			Clustering:       &bigquery.Clustering{Fields: Clustering},
			Description:      "Kollect inventory rows (one per collected object)",
		})
		if err != nil && !hasStatus(err, http.StatusConflict) {
			if notFound(err) {
				return sinks.Permanent(fmt.Errorf("dataset %s.%s does not exist; Kollect does not create datasets", s.cfg.Project, s.cfg.Dataset))
			}
			return s.classify("create table", err)
		}
	}
	md, err := t.Metadata(ctx)
	if err != nil {
		if notFound(err) {
			return sinks.Permanent(fmt.Errorf("table %s.%s.%s does not exist; provisioning.mode is existing, so create it (see the BigQuery sink documentation) or use mode ensure",
				s.cfg.Project, s.cfg.Dataset, s.cfg.Table))
		}
		return s.classify("read table", err)
	}
	if missing := missingColumns(md.Schema); len(missing) > 0 {
		return sinks.Permanent(fmt.Errorf("table %s.%s.%s lacks the columns %v (or has them with other types)", s.cfg.Project, s.cfg.Dataset, s.cfg.Table, missing))
	}
	s.prepared = true
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

// Export makes the table hold exactly d.Next for the inventory and this
// sink's cluster.
func (s *Sink) Export(ctx context.Context, d *rows.Delta) (sinks.Ack, error) {
	if err := s.prepare(ctx); err != nil {
		return sinks.Ack{}, err
	}
	id := d.Next.Inventory
	if err := s.settle(ctx, id.Namespace, id.Name); err != nil {
		return sinks.Ack{}, err
	}
	x := &export{s: s, ns: id.Namespace, name: id.Name, at: time.Now().UTC().Truncate(time.Microsecond), kept: d.Next.Keep}
	x.sql = newStatements(s.cfg.Project, s.cfg.Dataset, s.cfg.Table, s.stagingTable(id.Namespace, id.Name))
	defer x.dropStage()

	var (
		ack sinks.Ack
		err error
	)
	switch {
	case len(d.Next.Rows) == 0:
		ack, err = x.clear(ctx)
	case d.Full():
		ack, err = x.full(ctx, d.Next.Rows)
	default:
		ack, err = x.delta(ctx, d)
		if err == nil && ack.Rows != len(d.Next.Rows) {
			// The table does not hold what this sink last wrote (someone
			// edited it): reconcile against the whole snapshot.
			var again sinks.Ack
			again, err = x.full(ctx, d.Next.Rows)
			again.Written += ack.Written
			again.Bytes += ack.Bytes
			ack = again
		}
	}
	if err != nil {
		return sinks.Ack{}, s.classify("export", err)
	}
	ack.Changed = ack.Written > 0
	return ack, nil
}

// stagingTable names the staging table of one inventory and cluster, so
// that exports of different inventories (or clusters) never share one.
func (s *Sink) stagingTable(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name + "/" + s.cfg.Cluster))
	return s.cfg.Table + "_kollect_staging_" + hex.EncodeToString(sum[:6])
}

func notFound(err error) bool { return hasStatus(err, http.StatusNotFound) }

func hasStatus(err error, code int) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == code
}

// done is iterator.Done, for readers of a result.
var done = iterator.Done
