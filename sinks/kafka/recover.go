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
	cl, err := s.connect()
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, s.cfg.Topic)
	if err != nil {
		return nil, s.classify("list offsets", err)
	}
	ends, err := adm.ListEndOffsets(ctx, s.cfg.Topic)
	if err != nil {
		return nil, s.classify("list offsets", err)
	}
	state := events.State{}
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
		// A partition skipped would leave its rows out of the state:
		// republished, and their deletes never sent. Retry instead.
		return nil, s.classify("list offsets", listErr)
	}
	if len(want) == 0 {
		return state, nil
	}
	reader, err := kgo.NewClient(append(s.opts[:len(s.opts):len(s.opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.Topic: want}))...)
	if err != nil {
		return nil, s.classify("read back topic", err)
	}
	defer reader.Close()
	idle, seen := 0, false
	for len(remaining) > 0 {
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		fs := reader.PollFetches(pollCtx)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, s.classify("read back topic", err)
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			hdr := func(k string) string {
				for _, h := range r.Headers {
					if h.Key == k {
						return string(h.Value)
					}
				}
				return ""
			}
			state.Fold(scope, hdr)
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
		})
		for _, fe := range fs.Errors() {
			if fe.Err != context.DeadlineExceeded && fe.Err != context.Canceled {
				return nil, s.classify("read back topic", fe.Err)
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
			return state, nil
		default:
			idle++
		}
	}
	return state, nil
}
