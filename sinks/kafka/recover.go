package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/utils/clock"

	"kollect.dev/kollect/sinks/events"
)

// recover folds what the topic holds for scope, from the topic's image
// (see image): the sinks of many inventories on one topic share one read.
func (s *Sink) recover(ctx context.Context, scope events.Scope) (*events.Recovered, error) {
	s.mu.Lock()
	im := s.image
	s.mu.Unlock()
	if im == nil { // closed meanwhile: a read of its own
		im = newImage(s.readOpts(), s.cfg.Topic, s.cfg.Clock)
	}
	rec, err := im.recover(ctx, scope)
	if err != nil {
		return nil, s.classify("read back topic", err)
	}
	return rec, nil
}

// readOpts are the options of a client that reads the topic back: the
// sink's, and a hook that counts the bytes of fetch responses (cfg.Read).
func (s *Sink) readOpts() []kgo.Opt {
	if s.cfg.Read == nil {
		return s.opts
	}
	return append(slices.Clone(s.opts), kgo.WithHooks(FetchMeter(s.cfg.Read)))
}

// FetchMeter is a client hook that tells a function the bytes of each
// fetch response the client reads: what Config.Read counts, for callers
// that count a read of a topic the same way.
type FetchMeter func(bytes int)

// fetchKey is the Kafka API key of a fetch.
const fetchKey = int16(1)

// OnBrokerRead implements kgo.HookBrokerRead.
func (m FetchMeter) OnBrokerRead(_ kgo.BrokerMetadata, key int16, bytesRead int, _, _ time.Duration, err error) {
	if key == fetchKey && err == nil {
		m(bytesRead)
	}
}

// ReadTopic hands each every record of topic, partition by partition from
// its start offset to the end offset (high-water mark) it had when called,
// with a client of its own built from opts (brokers, TLS, SASL). A
// partition is read until the reader's position reaches that end: a
// compacted tail, a control record or an empty batch moves the position
// without a record, so nothing is taken as read that was not fetched. A
// partition whose offsets cannot be listed, or whose leader gives no
// progress for stallAfter (a leader election in a rolling restart), is an
// error, never skipped: a reader that missed records would see rows as
// missing and never see their deletes.
func ReadTopic(ctx context.Context, opts []kgo.Opt, topic string, each func(*kgo.Record)) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = readFrom(ctx, clock.RealClock{}, cl, topic, nil, each)
	return err
}

// errRewound: the topic no longer holds records a resumed read has not
// read (retention deleted them, or the topic was made again); the read
// must start over from the topic's start.
var errRewound = errors.New("the topic no longer holds the records after the last read")

// readFrom is ReadTopic resumed: each partition is read from its offset in
// from (from its start offset when from has none) to the end offset listed
// when called; those ends are returned, for the next read to resume at.
func readFrom(ctx context.Context, clk clock.PassiveClock, cl *kgo.Client, topic string, from map[int32]int64, each func(*kgo.Record)) (map[int32]int64, error) {
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	type span struct{ from, to int64 }
	spans, reached := map[int32]span{}, map[int32]int64{}
	var listErr error
	ends.Each(func(o kadm.ListedOffset) {
		start, ok := starts.Lookup(o.Topic, o.Partition)
		switch {
		case o.Err != nil:
			listErr = o.Err
		case !ok || start.Err != nil:
			listErr = fmt.Errorf("no start offset for partition %d", o.Partition)
		default:
			at, resumed := from[o.Partition]
			if !resumed {
				at = start.Offset
			}
			if resumed && (start.Offset > at || o.Offset < at) {
				listErr = fmt.Errorf("partition %d: %w", o.Partition, errRewound)
			}
			reached[o.Partition] = max(at, o.Offset)
			if o.Offset > at {
				spans[o.Partition] = span{at, o.Offset}
			}
		}
	})
	if listErr != nil {
		return nil, fmt.Errorf("list offsets: %w", listErr)
	}
	parts := make([]int32, 0, len(spans))
	for p := range spans {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	r := &partitionReader{cl: cl, adm: adm, topic: topic, stallAfter: stallAfter, clock: clk}
	for _, p := range parts {
		if err := r.read(ctx, p, spans[p].from, spans[p].to, each); err != nil {
			return nil, err
		}
	}
	return reached, nil
}

// stallAfter is how long a partition may give no progress before its read
// fails (and the export that needed it is retried).
const stallAfter = 30 * time.Second

// partitionReader fetches partitions from their leaders directly, so that
// it knows the position each fetch reached.
type partitionReader struct {
	cl         *kgo.Client
	adm        *kadm.Client
	topic      string
	stallAfter time.Duration
	clock      clock.PassiveClock
	// leader and id are the partition leaders and topic id last looked up.
	leader map[int32]int32
	id     kadm.TopicID
}

func (r *partitionReader) lookup(ctx context.Context) error {
	ts, err := r.adm.ListTopics(ctx, r.topic)
	if err != nil {
		return err
	}
	td, ok := ts[r.topic]
	if !ok || td.Err != nil {
		return fmt.Errorf("describe topic %s: %w", r.topic, td.Err)
	}
	r.id, r.leader = td.ID, map[int32]int32{}
	for p, pd := range td.Partitions {
		r.leader[p] = pd.Leader
	}
	return nil
}

// read hands each every record of partition p in [from, to).
func (r *partitionReader) read(ctx context.Context, p int32, from, to int64, each func(*kgo.Record)) error {
	pos, lastProgress := from, r.clock.Now()
	var lastErr error
	for pos < to {
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.clock.Since(lastProgress) > r.stallAfter {
			return fmt.Errorf("read partition %d of %s: no progress at offset %d of %d for %s (%v); retrying", p, r.topic, pos, to, r.stallAfter, lastErr) //nolint:errorlint // the last fetch error is context; the stall is what failed
		}
		next, err := r.fetch(ctx, p, pos, each)
		switch {
		case err != nil:
			lastErr = err
			r.leader = nil // look the leader up again
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		case next > pos:
			pos, lastProgress = next, r.clock.Now()
		}
	}
	return nil
}

// fetch fetches partition p from offset pos and returns the position the
// fetch reached.
func (r *partitionReader) fetch(ctx context.Context, p int32, pos int64, each func(*kgo.Record)) (int64, error) {
	if r.leader == nil {
		if err := r.lookup(ctx); err != nil {
			return pos, err
		}
	}
	leader, ok := r.leader[p]
	if !ok || leader < 0 {
		return pos, fmt.Errorf("partition %d has no leader", p)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 500, 1, 16<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = r.topic, r.id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, pos, 8<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, r.cl.Broker(int(leader)))
	if err != nil {
		return pos, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return pos, err
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			part := &resp.Topics[i].Partitions[j]
			if part.Partition != p {
				continue
			}
			if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
				return pos, err
			}
			fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: pos, Topic: r.topic, Partition: p}, part, kgo.DefaultDecompressor(), nil)
			if fp.Err != nil {
				return pos, fp.Err
			}
			for _, rec := range fp.Records {
				each(rec)
			}
			return next, nil
		}
	}
	return pos, fmt.Errorf("the fetch of partition %d returned no partition", p)
}

// Header returns a record header's value, or "".
func Header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
