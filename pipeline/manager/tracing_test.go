package manager

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"
)

// TestTracingIsOffWithoutAnEndpoint: no OTEL_* endpoint, no exporter, and
// spans are no-ops.
func TestTracingIsOffWithoutAnEndpoint(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	otel.SetTracerProvider(noop.NewTracerProvider())
	stop, err := setupTracing(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stop(context.Background()) }()
	_, span := otel.Tracer("t").Start(context.Background(), "s")
	defer span.End()
	if span.SpanContext().IsValid() {
		t.Fatal("a span was recorded with tracing off")
	}
}

// TestTracingExportsOverOTLPFromTheEnvironment: OTEL_EXPORTER_OTLP_ENDPOINT
// alone turns tracing on; spans reach the OTLP/HTTP receiver it names.
func TestTracingExportsOverOTLPFromTheEnvironment(t *testing.T) {
	var posts atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer recv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "kollect-test")
	defer otel.SetTracerProvider(noop.NewTracerProvider())
	stop, err := setupTracing(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("t").Start(context.Background(), "kollect.export")
	if !span.SpanContext().IsValid() {
		t.Fatal("tracing is off although an endpoint is set")
	}
	span.End()
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if posts.Load() == 0 {
		t.Fatal("no span reached the OTLP receiver")
	}
}
