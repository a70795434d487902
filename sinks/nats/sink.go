package nats

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/utils/clock"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/events"
)

// Config is a NATS sink's plain configuration.
type Config struct {
	// Clock stamps what the sink writes (row and message times, commit
	// times) and times its waits on the server (nil: the real clock).
	Clock   clock.PassiveClock
	URL     string
	Subject string
	Stream  string // default kollect_events; dots become underscores
	Cluster string
	// Existing never creates or changes the stream.
	Existing bool
	// Envelope publishes upstream's messages: one per export (per part),
	// the whole envelope, with a Nats-Msg-Id of its content, instead of
	// one per row change (spec.messages: envelope).
	Envelope bool
	// Replay publishes every row on the first export instead of only what
	// differs from what the stream already holds.
	Replay bool
	// MaxAge is the maximum age of the messages of a stream this sink
	// creates (0: no limit). A stream it finds keeps its own limits.
	MaxAge time.Duration
	// RefreshEvery is how old a scope's checkpoint may grow before the
	// sink renews it; 0: a quarter of the stream's maximum age (no renewal
	// for a stream without one).
	RefreshEvery time.Duration
	// Writer names this operator in every message's headers and in
	// checkpoints; a full export whose scope's live rows another writer
	// (not Adopt) published last is refused (sinks.ForeignWriter).
	Writer, Adopt string

	Token, Username, Password string
	CA                        []byte
	InsecureSkipVerify        bool
	// Dial connects to the server, on every (re)connection; nil uses a
	// plain dialer. The operator passes one that refuses forbidden
	// endpoints at the address dialled.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Clients, when set, shares one connection among the sinks of the
	// same server, credentials and TLS settings (each keeps its own
	// JetStream context); nil gives the sink a connection of its own.
	Clients *sinks.Clients
}

// Sink publishes row changes to JetStream.
type Sink struct {
	cfg Config

	mu       sync.Mutex
	nc       *natsgo.Conn
	release  func() // gives nc back
	js       jetstream.JetStream
	stream   jetstream.Stream // ensured once per connection; dropped after a failed export
	replayed bool
	// sinceCheckpoint counts, per scope, the messages published since its
	// last checkpoint; setAside marks the scopes with a row set aside since
	// their last full reconcile (no checkpoint is exact for them).
	sinceCheckpoint map[string]int
	setAside        map[string]bool
	// exact is, per scope, the state this sink knows the stream holds, for
	// the checkpoints it renews (refresh.go); exporting is held by an
	// export and by a renewal, which must not interleave.
	exact                    map[string]*exactState
	exporting                sync.Mutex
	stopRefresh, refreshDone chan struct{}
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
	if cfg.URL == "" {
		return nil, sinks.Permanent(errors.New("a nats sink needs spec.nats.url or spec.endpoint"))
	}
	if cfg.Subject == "" {
		return nil, sinks.Permanent(errors.New("spec.nats.subject is required"))
	}
	if cfg.Stream == "" {
		cfg.Stream = "kollect_events"
	}
	cfg.Stream = strings.ReplaceAll(cfg.Stream, ".", "_")
	return &Sink{cfg: cfg}, nil
}

// Close gives the connection back: a shared one closes with its last
// sink.
func (s *Sink) Close() {
	s.stopRefreshing()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nc != nil {
		s.release()
		s.nc, s.js, s.release = nil, nil, nil
	}
}

func (s *Sink) connect(ctx context.Context) (jetstream.JetStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.js != nil {
		return s.js, nil
	}
	opts := []natsgo.Option{natsgo.Name("kollect"), natsgo.MaxReconnects(-1), natsgo.ReconnectWait(250 * time.Millisecond),
		natsgo.Timeout(5 * time.Second), natsgo.SetCustomDialer(dialer{dial: s.cfg.Dial})}
	switch {
	case s.cfg.Token != "":
		opts = append(opts, natsgo.Token(s.cfg.Token))
	case s.cfg.Username != "":
		opts = append(opts, natsgo.UserInfo(s.cfg.Username, s.cfg.Password))
	}
	if len(s.cfg.CA) > 0 || s.cfg.InsecureSkipVerify {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.cfg.InsecureSkipVerify} //nolint:gosec // only when the sink asks
		if len(s.cfg.CA) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(s.cfg.CA) {
				return nil, sinks.Permanent(errors.New("tls CA bundle holds no PEM certificate"))
			}
			tc.RootCAs = pool
		}
		opts = append(opts, natsgo.Secure(tc))
	}
	c := s.cfg
	key := strings.Join([]string{c.URL, c.Token, c.Username, c.Password, string(c.CA), strconv.FormatBool(c.InsecureSkipVerify)}, "\x00")
	v, release, err := c.Clients.Acquire("nats", key, func() (any, func(), error) {
		nc, err := natsgo.Connect(c.URL, opts...)
		if err != nil {
			return nil, nil, err
		}
		return nc, nc.Close, nil
	})
	if err != nil {
		return nil, s.classify("connect", err)
	}
	nc := v.(*natsgo.Conn)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096), jetstream.WithPublishAsyncTimeout(5*time.Second))
	if err != nil {
		release()
		return nil, fmt.Errorf("nats jetstream: %w", err)
	}
	s.nc, s.js, s.stream, s.release = nc, js, nil, release
	return js, nil
}

// ensureStream creates the stream when it is missing (mode ensure) and
// checks that the stream captures the subject. An existing stream is never
// changed: widening it with a sink's subject would let a tenant's sink
// redirect what a platform's stream stores (and read it back).
func (s *Sink) ensureStream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	st, err := js.Stream(ctx, s.cfg.Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound) && s.cfg.Existing:
		return nil, sinks.Permanent(fmt.Errorf("stream %q does not exist and provisioning.mode is existing", s.cfg.Stream))
	case errors.Is(err, jetstream.ErrStreamNotFound):
		st, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: s.cfg.Stream, Subjects: []string{s.cfg.Subject},
			Duplicates: 2 * time.Minute, MaxAge: s.cfg.MaxAge})
		if err != nil {
			return nil, s.classify("create stream", err)
		}
		return st, nil
	case err != nil:
		return nil, s.classify("read stream", err)
	}
	cfg := st.CachedInfo().Config
	if slices.Contains(cfg.Subjects, s.cfg.Subject) {
		return st, nil
	}
	return nil, sinks.Permanent(fmt.Errorf("stream %q exists and does not capture subject %q (it captures %s): Kollect does not change a stream it finds; "+
		"add the subject to the stream, or name a subject it captures", s.cfg.Stream, s.cfg.Subject, strings.Join(cfg.Subjects, ", ")))
}

// Probe connects and reads the JetStream account.
func (s *Sink) Probe(ctx context.Context) error {
	js, err := s.connect(ctx)
	if err != nil {
		return err
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		return s.classify("account info", err)
	}
	return nil
}

// KeepsTargets reports that a full export can leave kept targets' live
// rows alone (no tombstone): every key names its target.
func (s *Sink) KeepsTargets() bool { return !s.cfg.Envelope }

// Export publishes one message per change and returns once the server has
// acknowledged every one.
func (s *Sink) Export(ctx context.Context, d *rows.Delta) (sinks.Ack, error) {
	js, err := s.connect(ctx)
	if err != nil {
		return sinks.Ack{}, err
	}
	if !js.Conn().IsConnected() {
		return sinks.Ack{}, fmt.Errorf("nats: not connected to %s (status %s); retrying", s.cfg.URL, js.Conn().Status())
	}
	// Stream API calls wait for a reconnect; bound them so an outage fails
	// the attempt quickly and the sink actor's back-off takes over.
	apiCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s.mu.Lock()
	st := s.stream
	s.mu.Unlock()
	if st == nil {
		if st, err = s.ensureStream(apiCtx, js); err != nil {
			return sinks.Ack{}, err
		}
	}
	var ack sinks.Ack
	s.exporting.Lock()
	if s.cfg.Envelope {
		ack, err = s.publishEnvelopes(ctx, js, d.Next)
	} else {
		ack, err = s.publish(ctx, apiCtx, js, st, d)
	}
	s.exporting.Unlock()
	// A failed export may mean the stream changed under us: check it again
	// next time.
	if err != nil {
		st = nil
		s.untrack()
	} else if !s.cfg.Envelope {
		s.startRefresh(st.CachedInfo().Config.MaxAge)
	}
	s.mu.Lock()
	s.stream = st
	s.mu.Unlock()
	return ack, err
}

// publish sends d's changes and waits for every acknowledgement.
func (s *Sink) publish(ctx, apiCtx context.Context, js jetstream.JetStream, st jetstream.Stream, d *rows.Delta) (sinks.Ack, error) {
	scope := events.Scope{Cluster: s.cfg.Cluster, Inventory: d.Next.Inventory, Writer: s.cfg.Writer}
	var recovered events.State
	// reconciled: recovery read the scope's whole state, up to upto.
	var reconciled bool
	var upto uint64
	if d.Full() && !(s.cfg.Replay && !s.replayed) {
		rec, last, err := s.recover(ctx, apiCtx, js, st, scope)
		if err != nil {
			return sinks.Ack{}, err
		}
		if err := rec.Check(scope, s.cfg.Adopt); err != nil {
			return sinks.Ack{}, err
		}
		recovered, reconciled, upto = rec.State, true, last
	}
	changes := events.Plan(scope, d, recovered)
	futures := make([]jetstream.PubAckFuture, 0, len(changes))
	var bytes int64
	var rejected []sinks.Rejection
	limit := js.Conn().MaxPayload()
	now := s.cfg.Clock.Now()
	for _, c := range changes {
		m := natsgo.NewMsg(s.cfg.Subject)
		size := 0
		for _, h := range scope.Headers(c) {
			m.Header.Set(h[0], h[1])
			size += len(h[0]) + len(h[1]) + 4
		}
		m.Data = scope.Body(c, now)
		if size += len(m.Data) + 128; limit > 0 && int64(size) > limit { // 128: the message id header and framing
			rejected = append(rejected, c.SetAside(fmt.Sprintf("the message is about %d bytes; the server accepts %d (max_payload)", size, limit)))
			continue
		}
		bytes += int64(len(m.Data))
		f, err := js.PublishMsgAsync(m, jetstream.WithMsgID(c.ID))
		if err != nil {
			return sinks.Ack{}, s.classify("publish", err)
		}
		futures = append(futures, f)
	}
	var seq uint64 // the stream sequence of the last message published
	for _, f := range futures {
		select {
		case pa := <-f.Ok():
			seq = max(seq, pa.Sequence)
		case err := <-f.Err():
			return sinks.Ack{}, s.classify("publish", err)
		case <-ctx.Done():
			return sinks.Ack{}, fmt.Errorf("nats publish: waiting for acknowledgements: %w", ctx.Err())
		}
	}
	s.replayed = true
	// Best effort: without a checkpoint, recovery reads more history.
	_ = s.maybeCheckpoint(apiCtx, js, scope, d, len(rejected), len(futures), seq, reconciled, upto)
	return sinks.Ack{Rows: len(d.Next.Rows) - len(rejected), Written: len(futures), Bytes: bytes, Changed: len(futures) > 0, Rejected: rejected}, nil
}

// publishEnvelopes publishes snap as upstream did: a message per part, the
// envelope in it, its Nats-Msg-Id the hash of what it carries (so an
// identical re-publish inside the duplicate window is dropped); nothing for
// an empty snapshot.
func (s *Sink) publishEnvelopes(ctx context.Context, js jetstream.JetStream, snap *rows.Snapshot) (sinks.Ack, error) {
	msgs, rejected, err := events.Envelopes(s.cfg.Cluster, snap, js.Conn().MaxPayload()-128, s.cfg.Clock.Now()) // 128: the id header and framing
	if err != nil {
		return sinks.Ack{}, err
	}
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	var bytes int64
	for _, m := range msgs {
		f, err := js.PublishMsgAsync(&natsgo.Msg{Subject: s.cfg.Subject, Data: m.Value}, jetstream.WithMsgID(m.ID))
		if err != nil {
			return sinks.Ack{}, s.classify("publish", err)
		}
		futures = append(futures, f)
		bytes += int64(len(m.Value))
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return sinks.Ack{}, s.classify("publish", err)
		case <-ctx.Done():
			return sinks.Ack{}, fmt.Errorf("nats publish: waiting for acknowledgements: %w", ctx.Err())
		}
	}
	return sinks.Ack{Rows: len(snap.Rows) - len(rejected), Written: len(futures), Bytes: bytes, Changed: len(futures) > 0, Rejected: rejected}, nil
}

// recover folds what the stream holds for scope: its checkpoint, when it
// has a usable one, and the messages after it; otherwise the whole history.
// It also returns the stream sequence it read up to. Its reads have no
// fixed budget (a quiet inventory on a busy shared stream may need long
// ones): they are bounded by ctx and by stallAfter without progress; each
// API call is bounded by api.
func (s *Sink) recover(ctx, api context.Context, js jetstream.JetStream, st jetstream.Stream, scope events.Scope) (*events.Recovered, uint64, error) {
	info, err := st.Info(api)
	if err != nil {
		return nil, 0, s.classify("read stream", err)
	}
	rec := &events.Recovered{}
	start, last := info.State.FirstSeq, info.State.LastSeq
	cp, stale, err := s.readCheckpoint(api, js, scope, info.State.FirstSeq)
	if err != nil {
		return nil, 0, s.classify("read checkpoint", err)
	}
	switch {
	case stale:
		rec.State, rec.Writer = unknownSums(cp.State), cp.Writer
	case cp != nil:
		rec.State, rec.Writer, start = cp.State, cp.Writer, cp.Seq+1
	}
	if info.State.Msgs == 0 || start > last {
		return rec, last, nil
	}
	cons, err := st.OrderedConsumer(api, jetstream.OrderedConsumerConfig{FilterSubjects: []string{s.cfg.Subject},
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start})
	if err != nil {
		return nil, 0, s.classify("read back stream", err)
	}
	for progress := s.cfg.Clock.Now(); ; {
		if err := ctx.Err(); err != nil {
			return nil, 0, fmt.Errorf("nats read back stream: %w", err)
		}
		batch, err := cons.FetchNoWait(1000)
		if err != nil {
			return nil, 0, s.classify("read back stream", err)
		}
		n, done := 0, false
		for m := range batch.Messages() {
			n++
			rec.Fold(scope, m.Headers().Get)
			if md, err := m.Metadata(); err == nil && (md.NumPending == 0 || md.Sequence.Stream >= last) {
				done = true
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, 0, s.classify("read back stream", err)
		}
		if done {
			return rec, last, nil
		}
		if n > 0 {
			progress = s.cfg.Clock.Now()
			continue
		}
		if s.cfg.Clock.Since(progress) > stallAfter {
			return nil, 0, fmt.Errorf("nats read back stream: no messages for %s though the stream holds %d up to sequence %d; retrying", stallAfter, info.State.Msgs, last)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stallAfter is how long recovery may receive nothing before it fails
// (and the export that needed it is retried).
const stallAfter = 10 * time.Second

func (s *Sink) classify(op string, err error) error {
	if errors.Is(err, sinks.ErrPermanent) {
		return err
	}
	msg := sinks.Redact(err.Error(), s.cfg.Token, s.cfg.Password)
	switch {
	case errors.Is(err, natsgo.ErrAuthorization), errors.Is(err, natsgo.ErrAuthExpired), strings.Contains(msg, "Authorization Violation"):
		return sinks.Permanent(fmt.Errorf("nats %s: authorization failed; check the token or username and password in the sink's Secret (%s)", op, msg))
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return sinks.Permanent(fmt.Errorf("nats %s: JetStream is not enabled on the server or account (%s)", op, msg))
	}
	if terr := sinks.Transport("nats", op, "the server's host", msg, err); terr != nil {
		return terr
	}
	return fmt.Errorf("nats %s: %s", op, msg)
}

// dialer applies the endpoint guard to every (re)connection.
type dialer struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (d dialer) Dial(network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if d.dial != nil {
		return d.dial(ctx, network, address)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, address)
}
