package mongodb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"k8s.io/utils/clock"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// Config is a MongoDB sink's plain configuration.
type Config struct {
	// Clock stamps what the sink writes: row and message times, commit
	// times (nil: the real clock).
	Clock clock.PassiveClock
	// URI is a mongodb:// or mongodb+srv:// connection string.
	URI string
	// Database and Collection name where the documents live.
	Database, Collection string
	// Cluster scopes every document this sink writes (spec.cluster).
	Cluster string
	// Existing never creates the collection or its index
	// (provisioning.mode existing); the collection must exist.
	Existing bool
	// CA verifies the server certificate (and turns TLS on);
	// InsecureSkipVerify skips the verification.
	CA                 []byte
	InsecureSkipVerify bool
	// Dial connects to a server; nil uses the driver's dialer. The operator
	// passes one that refuses forbidden endpoints at the address dialled.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Batch bounds the writes sent in one bulk command (default 100): a
	// command stays small, and servers that hold a resource per pending
	// write (FerretDB holds a connection) are not exhausted.
	Batch int
	// Clients, when set, shares one client (a connection pool) among the
	// sinks that reach the same servers with the same URI and TLS
	// settings; nil gives the sink a client of its own.
	Clients *sinks.Clients
}

// Sink writes inventories into one collection.
type Sink struct {
	cfg     Config
	client  *mongo.Client
	release func() // gives the client back (disconnects it when not shared)
	coll    *mongo.Collection
	secrets []string               // what redaction removes from messages
	refused *atomic.Pointer[error] // the client's last dial, when the guard refused it

	mu       sync.Mutex
	prepared bool
	state    map[scope]*held
}

// held is what the sink knows a scope's documents to be, from the
// server's acknowledgements since the last reconciliation.
type held struct {
	count int
	// aside are rows set aside (the server refused their document): the
	// collection holds an older version of each, or nothing.
	aside map[pair]bool
}

// pair is a document's key inside its scope.
type pair struct{ target, uid string }

// Sink is a Backend with these optional capabilities.
var (
	_ sinks.Backend = (*Sink)(nil)
	_ sinks.Prober  = (*Sink)(nil)
	_ sinks.Closer  = (*Sink)(nil)
	_ sinks.Keeper  = (*Sink)(nil)
)

// New validates cfg and prepares a client; nothing is dialled until the
// first export or probe.
func New(cfg Config) (*Sink, error) {
	cfg.Clock = sinks.OrRealClock(cfg.Clock)
	if cfg.Database == "" || cfg.Collection == "" {
		return nil, sinks.Permanent(errors.New("mongodb.database and mongodb.collection are required"))
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 50
	}
	secrets, err := checkURI(cfg.URI)
	if err != nil {
		return nil, sinks.Permanent(err)
	}
	// Defaults first: what the URI says wins.
	opts := options.Client().
		SetAppName("kollect").
		SetConnectTimeout(10 * time.Second).
		SetServerSelectionTimeout(10 * time.Second).
		ApplyURI(cfg.URI)
	if err := opts.Validate(); err != nil {
		return nil, sinks.Permanent(fmt.Errorf("the MongoDB URI cannot be used: %s", sinks.Redact(err.Error(), secrets...)))
	}
	s := &Sink{cfg: cfg, secrets: secrets, state: map[scope]*held{}}
	// The dialer records into refused, never into s: the client it serves
	// may be shared by sinks built later (sinks.Clients).
	refused := &atomic.Pointer[error]{}
	if cfg.Dial != nil {
		// The driver reports a failed dial as "no server selected"; the
		// sink remembers a refusal that retrying cannot fix, to say so.
		opts.SetDialer(dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := cfg.Dial(ctx, network, addr)
			switch {
			case err == nil:
				refused.Store(nil)
			case errors.Is(err, sinks.ErrPermanent):
				refused.Store(&err)
			}
			return c, err
		}))
	}
	if len(cfg.CA) > 0 || cfg.InsecureSkipVerify {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // the sink's own choice, reported as TLSInsecure
		if opts.TLSConfig != nil {
			tc = opts.TLSConfig.Clone()
			tc.InsecureSkipVerify = cfg.InsecureSkipVerify
		}
		if len(cfg.CA) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(cfg.CA) {
				return nil, sinks.Permanent(errors.New("tls CA bundle holds no PEM certificate"))
			}
			tc.RootCAs = pool
		}
		opts.SetTLSConfig(tc)
	}
	key := strings.Join([]string{cfg.URI, string(cfg.CA), strconv.FormatBool(cfg.InsecureSkipVerify)}, "\x00")
	v, release, err := cfg.Clients.Acquire("mongodb", key, func() (any, func(), error) {
		client, err := mongo.Connect(opts)
		if err != nil {
			return nil, nil, err
		}
		disconnect := func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = client.Disconnect(ctx)
		}
		return &sharedClient{client: client, refused: refused}, disconnect, nil
	})
	if err != nil {
		return nil, sinks.Permanent(fmt.Errorf("mongodb client: %s", sinks.Redact(err.Error(), secrets...)))
	}
	sc := v.(*sharedClient)
	s.client, s.refused, s.release = sc.client, sc.refused, release
	s.coll = sc.client.Database(cfg.Database).Collection(cfg.Collection)
	return s, nil
}

// sharedClient is a client and what its dialer last refused, shared by
// the sinks that use it.
type sharedClient struct {
	client  *mongo.Client
	refused *atomic.Pointer[error]
}

// dialer adapts a dial function to the driver's dialer.
type dialer func(ctx context.Context, network, addr string) (net.Conn, error)

func (d dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return d(ctx, network, addr)
}

// Close gives the client back: a shared client disconnects with its last
// sink.
func (s *Sink) Close() { s.release() }

// Probe pings the server and checks the collection is usable: created
// with its index in mode ensure, present in mode existing.
func (s *Sink) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := s.client.Ping(ctx, nil); err != nil {
		return s.classify("ping", err)
	}
	return s.prepare(ctx)
}

// KeepsTargets reports that a full export can leave kept targets'
// documents as they are: every document names its target.
func (s *Sink) KeepsTargets() bool { return true }

// Export makes the collection hold exactly d.Next for the inventory and
// this sink's cluster.
func (s *Sink) Export(ctx context.Context, d *rows.Delta) (sinks.Ack, error) {
	if err := s.prepare(ctx); err != nil {
		return sinks.Ack{}, err
	}
	sc := scope{namespace: d.Next.Inventory.Namespace, name: d.Next.Inventory.Name, cluster: s.cfg.Cluster}
	w := &writer{s: s, sc: sc, now: s.cfg.Clock.Now().UTC().Truncate(time.Millisecond)}
	s.mu.Lock()
	h := s.state[sc]
	delete(s.state, sc) // unknown until this export is acknowledged
	s.mu.Unlock()

	var (
		ack  sinks.Ack
		next *held
		err  error
	)
	switch {
	case len(d.Next.Rows) == 0 && !d.Next.Partial():
		ack, next, err = w.clear(ctx)
	case d.Full() || h == nil:
		ack, next, err = w.reconcile(ctx, d.Next.Rows, d.Next)
	default:
		ack, next, err = w.delta(ctx, d, h)
		if errors.Is(err, errDrift) {
			// The collection is not what this sink wrote (someone edited
			// it): reconcile against the whole snapshot.
			var again sinks.Ack
			again, next, err = w.reconcile(ctx, d.Next.Rows, d.Next)
			again.Written += ack.Written
			again.Bytes += ack.Bytes
			ack = again
		}
	}
	if err != nil {
		return sinks.Ack{}, s.classify("export", err)
	}
	s.mu.Lock()
	s.state[sc] = next
	s.mu.Unlock()
	ack.Rows = next.count
	ack.Changed = ack.Written > 0
	return ack, nil
}

// prepare provisions the collection and its index once (mode ensure), or
// checks the collection exists (mode existing).
func (s *Sink) prepare(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prepared {
		return nil
	}
	db := s.client.Database(s.cfg.Database)
	if s.cfg.Existing {
		names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: s.cfg.Collection}})
		if err != nil {
			return s.classify("list collections", err)
		}
		if len(names) == 0 {
			return sinks.Permanent(fmt.Errorf("collection %s.%s does not exist; provisioning.mode is existing, so create it (with a unique index on %v) or use mode ensure",
				s.cfg.Database, s.cfg.Collection, IdentityIndex))
		}
		s.prepared = true
		return nil
	}
	if err := db.CreateCollection(ctx, s.cfg.Collection); err != nil && !hasCode(err, codeNamespaceExists) {
		return s.classify("create collection", err)
	}
	keys := bson.D{}
	for _, k := range IdentityIndex {
		keys = append(keys, bson.E{Key: k, Value: 1})
	}
	_, err := s.coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: keys, Options: options.Index().SetUnique(true).SetName(identityIndexName)})
	switch {
	case err == nil, hasCode(err, codeIndexOptionsConflict):
		// created, or the same keys are already indexed under another name
	case hasCode(err, codeIndexKeySpecsConflict):
		return sinks.Permanent(fmt.Errorf("collection %s.%s has an index named %s with other keys; drop it so that Kollect can create its unique index on %v",
			s.cfg.Database, s.cfg.Collection, identityIndexName, IdentityIndex))
	default:
		return s.classify("create index", err)
	}
	s.prepared = true
	return nil
}
