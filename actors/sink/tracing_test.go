package sink_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"kollect.dev/kollect/actors/sink"
	"kollect.dev/kollect/sinks"
)

// TestExportSpans: with a tracer provider installed, an export is a
// kollect.export span linked to the collect span that produced the
// change, with a kollect.sink.write child that carries what the backend
// wrote, or its error.
func TestExportSpans(t *testing.T) {
	rec := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(rec))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	_, collect := tp.Tracer("test").Start(context.Background(), "kollect.collect")
	collect.End()
	be := &flakyBackend{}
	// The tracer provider is global and an earlier test's actor may still
	// be exporting: this test's spans are those of its own inventory.
	inv := fmt.Sprintf("ns/inv-%d", time.Now().UnixNano())
	sys, pid, results := harness(t, sink.Config{Inventory: inv, Key: "database/warehouse", Type: "postgres", Backend: sinks.Whole(be),
		BackoffBase: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	sys.Root.Send(pid, &sink.Offer{Snapshot: snapshot(t, "a", "b"), Links: []trace.Link{{SpanContext: collect.SpanContext()}}})
	if r := next(t, results); r.Err != nil {
		t.Fatal(r.Err)
	}
	be.setDown(true)
	sys.Root.Send(pid, &sink.Offer{Snapshot: snapshot(t, "a")})
	if r := next(t, results); r.Err == nil {
		t.Fatal("want a failed export")
	}

	spans := rec.GetSpans()
	var exports, writes []tracetest.SpanStub
	ours := map[trace.SpanID]bool{}
	for _, s := range spans {
		if s.Name != "kollect.export" {
			continue
		}
		for _, a := range s.Attributes {
			if a.Key == "kollect.inventory" && a.Value.AsString() == inv {
				exports = append(exports, s)
				ours[s.SpanContext.SpanID()] = true
			}
		}
	}
	for _, s := range spans {
		if s.Name == "kollect.sink.write" && ours[s.Parent.SpanID()] {
			writes = append(writes, s)
		}
	}
	if len(exports) < 2 || len(writes) < 2 {
		t.Fatalf("spans: %d exports, %d writes", len(exports), len(writes))
	}
	first := exports[0]
	if len(first.Links) != 1 || first.Links[0].SpanContext.SpanID() != collect.SpanContext().SpanID() {
		t.Errorf("the export is not linked to the collect span: %+v", first.Links)
	}
	attrs := map[attribute.Key]attribute.Value{}
	for _, a := range first.Attributes {
		attrs[a.Key] = a.Value
	}
	if attrs["kollect.inventory"].AsString() != inv || attrs["kollect.binding"].AsString() != "database/warehouse" ||
		attrs["kollect.sink.type"].AsString() != "postgres" || attrs["kollect.rows.upserted"].AsInt64() != 2 {
		t.Errorf("export span attributes: %v", first.Attributes)
	}
	if writes[0].Parent.SpanID() != first.SpanContext.SpanID() {
		t.Error("kollect.sink.write is not a child of kollect.export")
	}
	if writes[1].Status.Code != codes.Error || exports[1].Status.Code != codes.Error {
		t.Errorf("a failed write is not marked as an error: %v / %v", writes[1].Status, exports[1].Status)
	}
}
