package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"kollect.dev/kollect/sinks/events"
)

// recover folds what the topic holds for scope: it reads every partition
// from its start to the end offset it had when recovery began. On a
// compacted topic that is about one record per live row.
func (s *Sink) recover(ctx context.Context, scope events.Scope) (events.State, error) {
	state := events.State{}
	err := ReadTopic(ctx, s.opts, s.cfg.Topic, func(r *kgo.Record) {
		state.Fold(scope, func(k string) string { return Header(r, k) })
	})
	if err != nil {
		return nil, s.classify("read back topic", err)
	}
	return state, nil
}

// ReadTopic hands each to every record of topic, partition by partition
// from its start offset to the end offset it had when called, with a client
// of its own built from opts (brokers, TLS, SASL). A partition whose
// offsets cannot be listed is an error, never skipped: a reader that missed
// it would see rows as missing and never see their deletes.
func ReadTopic(ctx context.Context, opts []kgo.Opt, topic string, each func(*kgo.Record)) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list offsets: %w", err)
	}
	want := map[int32]kgo.Offset{}
	remaining := map[int32]int64{}
	var listErr error
	ends.Each(func(o kadm.ListedOffset) {
		start, ok := starts.Lookup(o.Topic, o.Partition)
		switch {
		case o.Err != nil:
			listErr = o.Err
		case !ok || start.Err != nil:
			listErr = fmt.Errorf("no start offset for partition %d", o.Partition)
		case o.Offset > start.Offset:
			want[o.Partition] = kgo.NewOffset().At(start.Offset)
			remaining[o.Partition] = o.Offset
		}
	})
	if listErr != nil {
		return fmt.Errorf("list offsets: %w", listErr)
	}
	if len(want) == 0 {
		return nil
	}
	reader, err := kgo.NewClient(append(opts[:len(opts):len(opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: want}))...)
	if err != nil {
		return err
	}
	defer reader.Close()
	idle, seen := 0, false
	read := map[int32]bool{} // partitions a record was read from
	for len(remaining) > 0 {
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		fs := reader.PollFetches(pollCtx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			read[r.Partition] = true
			each(r)
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
		})
		for _, fe := range fs.Errors() {
			if fe.Err != context.DeadlineExceeded && fe.Err != context.Canceled {
				return fe.Err
			}
		}
		// Compaction may have removed the last offsets (deleted
		// tombstones); several empty polls once records flowed mean there
		// is nothing more. Before the first record, the client may still
		// be connecting on a busy machine: wait longer, or a partial read
		// would republish rows and miss deletes.
		switch {
		case n > 0:
			idle, seen = 0, true
		case seen && idle >= 4, !seen && idle >= 14:
			// A partition that records were read from may end in a
			// compacted gap; one never reached is a partial read, which
			// must not pass for the topic's state.
			for p := range remaining {
				if !read[p] {
					return fmt.Errorf("read partition %d of %s: no record arrived before its end offset %d; retrying", p, topic, remaining[p])
				}
			}
			return nil
		default:
			idle++
		}
	}
	return nil
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
