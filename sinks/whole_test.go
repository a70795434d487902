package sinks_test

import (
	"context"
	"testing"
	"time"

	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
)

type plainSnapshot struct{}

func (plainSnapshot) Export(context.Context, *rows.Snapshot) (sinks.Ack, error) {
	return sinks.Ack{}, nil
}

type partedSnapshot struct{ plainSnapshot }

func (partedSnapshot) ExportParts(context.Context, *rows.Snapshot, []*rows.Part) (sinks.Ack, error) {
	return sinks.Ack{}, nil
}

type treeSnapshot struct{ partedSnapshot }

func (treeSnapshot) WantsParts(*rows.Snapshot) bool { return false }

// A snapshot backend wants parts when it takes them and does not say it
// writes the snapshot as a file per row.
func TestWholeWantsPartsOnlyForABackendThatWritesThem(t *testing.T) {
	snap := rows.NewSnapshot(rows.Identity{Namespace: "ns", Name: "inv"}, nil, time.Time{})
	for _, tc := range []struct {
		name string
		s    sinks.Snapshot
		want bool
	}{{"takes no parts", plainSnapshot{}, false}, {"takes parts", partedSnapshot{}, true}, {"writes a file per row", treeSnapshot{}, false}} {
		b, ok := sinks.Whole(tc.s).(sinks.PartWanter)
		if !ok {
			t.Fatal("Whole does not say whether it wants parts")
		}
		if got := b.WantsParts(snap); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
