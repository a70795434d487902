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
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
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

// Brokers are the seed addresses.
func (c *Cluster) Brokers() []string { return []string{"127.0.0.1:" + strconv.Itoa(c.port)} }

// ReadAll consumes a topic from its start up to the end offsets it had
// when called, with a client of its own.
func ReadAll(ctx context.Context, brokers []string, topic string) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	// Every partition's end offset, retried while a partition reports an
	// error (a restarted broker loading its data).
	remaining := map[int32]int64{}
	for {
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
		if err != nil {
			return nil, err
		}
		var partErr error
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				partErr = o.Err
			} else if o.Offset > 0 {
				remaining[o.Partition] = o.Offset
			}
		})
		if partErr == nil && ends.Error() == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("list end offsets of %s: %v", topic, partErr)
		}
		clear(remaining)
		time.Sleep(100 * time.Millisecond)
	}
	var out []*kgo.Record
	// Empty polls end the read once records flowed (compaction can leave
	// the end offsets unreachable); before the first record the client
	// may still be connecting on a busy machine.
	seen := false
	for idle := 0; len(remaining) > 0 && (seen && idle < 10 || !seen && idle < 30); {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			n++
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
		})
		if n == 0 {
			idle++
		} else {
			idle, seen = 0, true
		}
	}
	return out, nil
}

// Header returns a record header's value.
func Header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
