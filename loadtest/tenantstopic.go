package main

import (
	"context"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"kollect.dev/kollect/sinks/kafka"
)

// readBackMetric is the operator's count of bytes its sinks read back
// from their servers, by sink type.
const readBackMetric = "kollect_sink_read_back_bytes_total"

// readBack is what the operator at addr says its sinks of sinkType read
// back since it started.
func readBack(addr, sinkType string) (int64, error) {
	mfs, err := scrape(addr)
	if err != nil {
		return 0, err
	}
	mf := mfs[readBackMetric] // no series until a sink reads: nil
	if mf == nil {
		return 0, nil
	}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "type" && l.GetValue() == sinkType {
				return int64(m.GetCounter().GetValue()), nil
			}
		}
	}
	return 0, nil // no sink of that type read anything
}

// topicBytes is what one read of the whole topic costs: the bytes of the
// fetch responses, counted as the operator counts its own.
func topicBytes(ctx context.Context, broker, topic string) (int64, error) {
	var n atomic.Int64
	meter := kafka.FetchMeter(func(b int) { n.Add(int64(b)) })
	err := kafka.ReadTopic(ctx, []kgo.Opt{kgo.SeedBrokers(broker), kgo.WithHooks(meter)}, topic, func(*kgo.Record) {})
	return n.Load(), err
}
