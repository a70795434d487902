// Package kafkatest runs franz-go's kfake Kafka cluster on loopback for
// tests and benchmarks, with its data on disk so it can be stopped and
// started again, and reads topics back.
package kafkatest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kollect.dev/kollect/sinks/kafka"
)

// TB is the part of testing.TB the helpers use.
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// Cluster is a kfake cluster on a fixed port.
type Cluster struct {
	port int
	dir  string
	c    *kfake.Cluster
}

// Start starts a one-broker cluster on a free loopback port; it is closed
// and its data removed when the test ends.
func Start(tb TB) *Cluster {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "kollect-kafka-")
	if err != nil {
		tb.Fatal(err)
	}
	c := &Cluster{port: port, dir: dir}
	if err := c.Restart(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Stop(); os.RemoveAll(dir) })
	return c
}

// Restart starts the cluster again with its data.
func (c *Cluster) Restart() error {
	if c.c != nil {
		return nil
	}
	kc, err := kfake.NewCluster(kfake.Ports(c.port), kfake.DataDir(c.dir), kfake.NumBrokers(1))
	if err != nil {
		return err
	}
	c.c = kc
	return nil
}

// Stop closes the cluster, keeping its data.
func (c *Cluster) Stop() {
	if c.c != nil {
		c.c.Close()
		c.c = nil
	}
}

// Compact runs log compaction on every topic.
func (c *Cluster) Compact() { c.c.Compact() }

// StallFetches makes the broker answer every fetch of partition p of any
// topic from an offset past from with NOT_LEADER_FOR_PARTITION for d after
// the first such fetch, as during a leader election, and serve at most one
// record batch a fetch, so that a reader needs several fetches to reach a
// partition's end. It returns how many fetches it refused so far.
func (c *Cluster) StallFetches(p int32, from int64, d time.Duration) func() int {
	var until time.Time
	refused := 0
	var mu sync.Mutex
	c.c.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		req := kr.(*kmsg.FetchRequest)
		req.MaxBytes = 1
		stall := false
		for i := range req.Topics {
			for j := range req.Topics[i].Partitions {
				rp := &req.Topics[i].Partitions[j]
				rp.PartitionMaxBytes = 1
				stall = stall || (rp.Partition == p && rp.FetchOffset > from)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if stall && until.IsZero() {
			until = time.Now().Add(d)
		}
		if !stall || time.Now().After(until) {
			return nil, nil, false
		}
		refused++
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewFetchResponseTopic()
			t.Topic, t.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				part := kmsg.NewFetchResponseTopicPartition()
				part.Partition, part.ErrorCode, part.HighWatermark = rp.Partition, kerr.NotLeaderForPartition.Code, -1
				t.Partitions = append(t.Partitions, part)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil, true
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return refused
	}
}

// FetchesFrom counts, from now on, the fetches of any partition from an
// offset at or below offset (FetchesFrom(0): reads from a topic's start).
func (c *Cluster) FetchesFrom(offset int64) func() int {
	var mu sync.Mutex
	n := 0
	c.c.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		req := kr.(*kmsg.FetchRequest)
		mu.Lock()
		defer mu.Unlock()
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				if rp.FetchOffset <= offset {
					n++
				}
			}
		}
		return nil, nil, false
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// Brokers are the seed addresses.
func (c *Cluster) Brokers() []string { return []string{"127.0.0.1:" + strconv.Itoa(c.port)} }

// ReadAll consumes a topic from its start up to the end offsets it had
// when called, with a client of its own, retrying while a partition's
// offsets cannot be listed (a restarted broker loading its data).
func ReadAll(ctx context.Context, brokers []string, topic string) ([]*kgo.Record, error) {
	for {
		var out []*kgo.Record
		err := kafka.ReadTopic(ctx, []kgo.Opt{kgo.SeedBrokers(brokers...)}, topic, func(r *kgo.Record) { out = append(out, r) })
		if err == nil {
			return out, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read %s: %w", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
