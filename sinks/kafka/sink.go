package kafka

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
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"k8s.io/utils/clock"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/events"
)

// Config is a Kafka sink's plain configuration.
type Config struct {
	// Clock stamps what the sink writes (row and message times, commit
	// times) and times its waits on the server (nil: the real clock).
	Clock   clock.PassiveClock
	Brokers []string
	Topic   string
	Cluster string
	// Existing never creates the topic.
	Existing bool
	// Envelope publishes upstream's messages: one record per export (per
	// part), the whole envelope keyed <cluster>/<namespace>, instead of
	// one per row change (spec.messages: envelope).
	Envelope bool
	// Replay publishes every row on the first export instead of only what
	// differs from what the topic already holds.
	Replay bool
	// Writer names this operator in every record's headers; a full export
	// whose scope's live rows another writer (not Adopt) published last is
	// refused (sinks.ForeignWriter).
	Writer, Adopt string

	// Username and Password enable SASL SCRAM-SHA-256.
	Username, Password string
	// TLS is used when set (CA, InsecureSkipVerify or TLS true).
	TLS                bool
	CA                 []byte
	InsecureSkipVerify bool
	// Dial connects to a broker; nil uses a plain dialer. The operator
	// passes one that refuses forbidden endpoints at the address dialled.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DeliveryTimeout bounds how long a record is retried (default 10s).
	DeliveryTimeout time.Duration
	// Clients, when set, shares one producing client among the sinks of
	// the same brokers, topic, credentials and TLS settings; nil gives the
	// sink a client of its own.
	Clients *sinks.Clients
	// Read, when set, is told the bytes of every fetch response the sink
	// reads back from the topic (its recoveries), for the operator's
	// metrics.
	Read func(bytes int)
}

// Sink produces row changes to one topic.
type Sink struct {
	cfg  Config
	opts []kgo.Opt

	mu       sync.Mutex
	client   *kgo.Client
	release  func() // gives client back
	image    *image // the topic's shared read, for recoveries
	unshare  func() // gives image back
	ready    bool
	replayed bool
}

// Sink is a Backend with these optional capabilities.
var (
	_ sinks.Backend = (*Sink)(nil)
	_ sinks.Prober  = (*Sink)(nil)
	_ sinks.Closer  = (*Sink)(nil)
	_ sinks.Keeper  = (*Sink)(nil)
)

// New validates cfg; nothing is dialled until the first export or probe.
func New(cfg Config) (*Sink, error) {
	cfg.Clock = sinks.OrRealClock(cfg.Clock)
	if len(cfg.Brokers) == 0 || cfg.Topic == "" {
		return nil, sinks.Permanent(errors.New("spec.kafka.brokers and spec.kafka.topic are required"))
	}
	if cfg.DeliveryTimeout <= 0 {
		cfg.DeliveryTimeout = 10 * time.Second
	}
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.DefaultProduceTopic(cfg.Topic), kgo.ClientID("kollect"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5 * time.Millisecond),
		kgo.RecordDeliveryTimeout(cfg.DeliveryTimeout), kgo.ProducerBatchMaxBytes(maxBatchBytes)}
	var tc *tls.Config
	if cfg.TLS || len(cfg.CA) > 0 || cfg.InsecureSkipVerify {
		tc = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // only when the sink asks
		if len(cfg.CA) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(cfg.CA) {
				return nil, sinks.Permanent(errors.New("tls CA bundle holds no PEM certificate"))
			}
			tc.RootCAs = pool
		}
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	opts = append(opts, kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		if tc == nil {
			return dial(ctx, network, host)
		}
		c := tc.Clone()
		if c.ServerName == "" {
			c.ServerName, _, _ = net.SplitHostPort(host)
		}
		raw, err := dial(ctx, network, host)
		if err != nil {
			return nil, err
		}
		conn := tls.Client(raw, c)
		if err := conn.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		return conn, nil
	}))
	if cfg.Username != "" {
		opts = append(opts, kgo.SASL(scram.Auth{User: cfg.Username, Pass: cfg.Password}.AsSha256Mechanism()))
	}
	return &Sink{cfg: cfg, opts: opts}, nil
}

func (s *Sink) connect() (*kgo.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		return s.client, nil
	}
	c := s.cfg
	key := strings.Join([]string{strings.Join(c.Brokers, ","), c.Topic, c.Username, c.Password, strconv.FormatBool(c.TLS),
		string(c.CA), strconv.FormatBool(c.InsecureSkipVerify), c.DeliveryTimeout.String()}, "\x00")
	v, release, err := c.Clients.Acquire("kafka", key, func() (any, func(), error) {
		cl, err := kgo.NewClient(s.opts...)
		if err != nil {
			return nil, nil, err
		}
		return cl, cl.Close, nil
	})
	if err != nil {
		return nil, sinks.Permanent(fmt.Errorf("kafka client: %w", err))
	}
	// The image is per cluster as well: it folds one cluster's inventories.
	im, unshare, _ := c.Clients.Acquire("kafka-image", key+"\x00"+c.Cluster, func() (any, func(), error) {
		return newImage(s.readOpts(), c.Topic, s.cfg.Clock), func() {}, nil
	})
	s.client, s.release, s.image, s.unshare = v.(*kgo.Client), release, im.(*image), unshare
	return s.client, nil
}

// Close flushes nothing and gives the client back: a shared client
// closes with its last sink.
func (s *Sink) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		s.release()
		s.unshare()
		s.client, s.release, s.image, s.unshare = nil, nil, nil, nil
	}
}

// Probe reaches a broker and reads the topic's metadata.
func (s *Sink) Probe(ctx context.Context) error {
	cl, err := s.connect()
	if err != nil {
		return err
	}
	if err := cl.Ping(ctx); err != nil {
		return s.classify("ping", err)
	}
	return nil
}

// ensureTopic creates the topic, compacted, in mode ensure, and checks it
// exists in mode existing.
func (s *Sink) ensureTopic(ctx context.Context, cl *kgo.Client) error {
	s.mu.Lock()
	ready := s.ready
	s.mu.Unlock()
	if ready {
		return nil
	}
	adm := kadm.NewClient(cl)
	if s.cfg.Existing {
		topics, err := adm.ListTopics(ctx, s.cfg.Topic)
		if err != nil {
			return s.classify("read topic metadata", err)
		}
		if !topics.Has(s.cfg.Topic) {
			return sinks.Permanent(fmt.Errorf("topic %q does not exist and provisioning.mode is existing", s.cfg.Topic))
		}
	} else {
		compact := "compact"
		resp, err := adm.CreateTopic(ctx, -1, -1, map[string]*string{"cleanup.policy": &compact}, s.cfg.Topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return s.classify("create topic", err)
		}
	}
	s.mu.Lock()
	s.ready = true
	s.mu.Unlock()
	return nil
}

// KeepsTargets reports that a full export can leave kept targets' live
// rows alone (no tombstone): every key names its target. An envelope holds
// every target's rows, so in envelope mode it cannot.
func (s *Sink) KeepsTargets() bool { return !s.cfg.Envelope }

// Export produces one record per change and returns once every record is
// acknowledged.
func (s *Sink) Export(ctx context.Context, d *rows.Delta) (sinks.Ack, error) {
	cl, err := s.connect()
	if err != nil {
		return sinks.Ack{}, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = cl.Ping(pingCtx)
	cancel()
	if err != nil {
		return sinks.Ack{}, s.classify("reach brokers", err)
	}
	if err := s.ensureTopic(ctx, cl); err != nil {
		return sinks.Ack{}, err
	}
	if s.cfg.Envelope {
		return s.exportEnvelopes(ctx, cl, d.Next)
	}
	scope := events.Scope{Cluster: s.cfg.Cluster, Inventory: d.Next.Inventory, Writer: s.cfg.Writer}
	var recovered events.State
	if d.Full() && !(s.cfg.Replay && !s.replayed) {
		rec, err := s.recover(ctx, scope)
		if err != nil {
			return sinks.Ack{}, err
		}
		if err := rec.Check(scope, s.cfg.Adopt); err != nil {
			return sinks.Ack{}, err
		}
		recovered = rec.State
	}
	changes := events.Plan(scope, d, recovered)
	recs := make([]*kgo.Record, 0, len(changes))
	var bytes int64
	var rejected []sinks.Rejection
	now := s.cfg.Clock.Now()
	for _, c := range changes {
		r := &kgo.Record{Key: []byte(c.Key)}
		for _, h := range scope.Headers(c) {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
		}
		if c.Type == events.Upsert {
			r.Value = scope.Body(c, now)
		}
		size := len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			size += len(h.Key) + len(h.Value)
		}
		if size > maxRecordBytes {
			rejected = append(rejected, c.SetAside(fmt.Sprintf("the message is %d bytes; brokers accept %d by default (max.message.bytes)", size, maxRecordBytes)))
			continue
		}
		bytes += int64(size)
		recs = append(recs, r)
	}
	if len(recs) > 0 {
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return sinks.Ack{}, s.classify("produce", err)
		}
	}
	s.replayed = true
	return sinks.Ack{Rows: len(d.Next.Rows) - len(rejected), Written: len(recs), Bytes: bytes, Changed: len(recs) > 0, Rejected: rejected}, nil
}

// exportEnvelopes produces snap as upstream did: a record per part, the
// envelope in it, no headers; nothing for an empty snapshot.
func (s *Sink) exportEnvelopes(ctx context.Context, cl *kgo.Client, snap *rows.Snapshot) (sinks.Ack, error) {
	msgs, rejected, err := events.Envelopes(s.cfg.Cluster, snap, maxRecordBytes, s.cfg.Clock.Now())
	if err != nil {
		return sinks.Ack{}, err
	}
	recs := make([]*kgo.Record, 0, len(msgs))
	var bytes int64
	for _, m := range msgs {
		recs = append(recs, &kgo.Record{Key: []byte(m.Key), Value: m.Value})
		bytes += int64(len(m.Key) + len(m.Value))
	}
	if len(recs) > 0 {
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return sinks.Ack{}, s.classify("produce", err)
		}
	}
	return sinks.Ack{Rows: len(snap.Rows) - len(rejected), Written: len(recs), Bytes: bytes, Changed: len(recs) > 0, Rejected: rejected}, nil
}

// A record batch must fit the broker's max.message.bytes (1,048,588 by
// default): batches stay under it, and a single message over it is set
// aside rather than failing every export of the binding.
const (
	maxBatchBytes  = 1_000_000
	maxRecordBytes = maxBatchBytes - 1024 // batch and record framing
)

func (s *Sink) classify(op string, err error) error {
	if errors.Is(err, sinks.ErrPermanent) {
		return err
	}
	msg := sinks.Redact(err.Error(), s.cfg.Password)
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState), errors.Is(err, kerr.UnsupportedSaslMechanism):
		return sinks.Permanent(fmt.Errorf("kafka %s: SASL authentication failed; check username and password in the sink's Secret (%s)", op, msg))
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed):
		return sinks.Permanent(fmt.Errorf("kafka %s: not authorized for topic %q; grant WRITE (and CREATE in mode ensure) (%s)", op, s.cfg.Topic, msg))
	}
	if terr := sinks.Transport("kafka", op, "a broker host", msg, err); terr != nil {
		return terr
	}
	return fmt.Errorf("kafka %s: %s", op, msg)
}
