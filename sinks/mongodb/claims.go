package mongodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

// writersCollection records which operator writes each inventory of each
// collection (sinks.Claims), in the sink's database: the rows' documents
// keep upstream's fields.
const writersCollection = "kollect_writers"

var _ sinks.Claims = (*Sink)(nil)

type writerRecord struct {
	ID        string    `bson:"_id"`
	Writer    string    `bson:"writer"`
	UpdatedAt time.Time `bson:"updatedAt"`
}

func (s *Sink) writerID(id rows.Identity) string {
	return s.cfg.Collection + "/" + s.cfg.Cluster + "/" + id.Namespace + "/" + id.Name
}

func (s *Sink) writers() *mongo.Collection {
	return s.client.Database(s.cfg.Database).Collection(writersCollection)
}

// Writer returns the writer recorded for the inventory in this sink's
// collection and cluster.
func (s *Sink) Writer(ctx context.Context, id rows.Identity) (string, error) {
	var rec writerRecord
	err := s.writers().FindOne(ctx, bson.D{{Key: "_id", Value: s.writerID(id)}}).Decode(&rec)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return "", nil
	}
	if err != nil {
		return "", s.classify("read the writer record", err)
	}
	return rec.Writer, nil
}

// SetWriter records (or, for "", removes) the inventory's writer.
func (s *Sink) SetWriter(ctx context.Context, id rows.Identity, writer string) error {
	filter := bson.D{{Key: "_id", Value: s.writerID(id)}}
	var err error
	if writer == "" {
		_, err = s.writers().DeleteOne(ctx, filter)
	} else {
		_, err = s.writers().ReplaceOne(ctx, filter, writerRecord{ID: s.writerID(id), Writer: writer, UpdatedAt: s.cfg.Clock.Now().UTC()},
			options.Replace().SetUpsert(true))
	}
	if err != nil {
		return s.classify(fmt.Sprintf("record writer %q", writer), err)
	}
	return nil
}
