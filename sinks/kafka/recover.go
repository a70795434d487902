package kafka

import (
	"context"
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
	ends.Each(func(o kadm.ListedOffset) {
		start, _ := starts.Lookup(o.Topic, o.Partition)
		if o.Err == nil && o.Offset > start.Offset {
			want[o.Partition] = kgo.NewOffset().At(start.Offset)
			remaining[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return state, nil
	}
	reader, err := kgo.NewClient(append(s.opts[:len(s.opts):len(s.opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.Topic: want}))...)
	if err != nil {
		return nil, s.classify("read back topic", err)
	}
	defer reader.Close()
	idle := 0
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
		// tombstones); several empty polls mean there is nothing more.
		if n == 0 {
			if idle++; idle >= 3 {
				break
			}
		} else {
			idle = 0
		}
	}
	return state, nil
}
