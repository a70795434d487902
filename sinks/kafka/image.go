package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"k8s.io/utils/clock"

	"kollect.dev/kollect/sinks/events"
)

// imageIdle is how long a topic's image is kept after its last recovery.
// A restart's recoveries come within seconds of each other; the image
// (every key of the cluster's inventories on the topic) is then dropped.
const imageIdle = time.Minute

// image is one process's read of a topic, shared by every sink of the
// same brokers, credentials, topic and cluster (through sinks.Clients):
// after a restart a thousand inventories on one topic read it about once,
// not once each. The first recovery reads the topic from its start and
// folds the records of every inventory of the cluster (events.Image); each
// later one reads only what was produced since the last read, then takes
// a copy of its own inventory's state (a scope recovered a second time,
// after a failed export, included). A read that failed, or a topic that
// lost records since, starts a new image.
type image struct {
	opts  []kgo.Opt
	topic string
	clock clock.PassiveClock // times the reads' progress
	turn  chan struct{}      // one read at a time; held while the image is used

	folded  *events.Image
	offsets map[int32]int64 // where the next read resumes
	idle    *time.Timer
}

func newImage(opts []kgo.Opt, topic string, clk clock.PassiveClock) *image {
	return &image{opts: opts, topic: topic, clock: clk, turn: make(chan struct{}, 1)}
}

// recover returns what the topic holds for scope: everything produced
// before the call.
func (im *image) recover(ctx context.Context, scope events.Scope) (*events.Recovered, error) {
	select {
	case im.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-im.turn }()
	if im.folded == nil || im.folded.Cluster != scope.Cluster {
		im.folded, im.offsets = &events.Image{Cluster: scope.Cluster}, nil
	}
	cl, err := kgo.NewClient(im.opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	fold := func(r *kgo.Record) { im.folded.Fold(func(k string) string { return Header(r, k) }) }
	ends, err := readFrom(ctx, im.clock, cl, im.topic, im.offsets, fold)
	if errors.Is(err, errRewound) {
		im.folded, im.offsets = &events.Image{Cluster: scope.Cluster}, nil
		ends, err = readFrom(ctx, im.clock, cl, im.topic, nil, fold)
	}
	if err != nil {
		im.folded, im.offsets = nil, nil // partly read: not an image of anything
		return nil, err
	}
	im.offsets = ends
	rec := im.folded.Take(scope)
	if im.idle != nil {
		im.idle.Stop()
	}
	im.idle = time.AfterFunc(imageIdle, im.drop)
	return rec, nil
}

// drop forgets the image (its memory) once no recovery came for a while.
func (im *image) drop() {
	im.turn <- struct{}{}
	im.folded, im.offsets = nil, nil
	<-im.turn
}
