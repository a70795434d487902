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

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

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
