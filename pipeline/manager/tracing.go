package manager

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// setupTracing installs an OTLP span exporter when the standard
// OpenTelemetry environment asks for one (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, and OTEL_TRACES_EXPORTER not "none").
// Endpoint, headers, protocol (OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf,
// the default, or grpc), sampler (OTEL_TRACES_SAMPLER) and service name
// (OTEL_SERVICE_NAME, default kollect) come from the same variables.
// Otherwise tracing stays off: the global provider is a no-op and spans
// cost nothing. The returned function flushes and stops the exporter.
func setupTracing(ctx context.Context) (func(context.Context) error, error) {
	off := func(context.Context) error { return nil }
	if os.Getenv("OTEL_TRACES_EXPORTER") == "none" ||
		(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "") {
		return off, nil
	}
	var client otlptrace.Client
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "", "http/protobuf":
		client = otlptracehttp.NewClient()
	case "grpc":
		client = otlptracegrpc.NewClient()
	default:
		return off, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: use http/protobuf or grpc", protocol)
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return off, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	attrs := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("kollect"))
	res, err := resource.Merge(attrs, resource.Environment())
	if err != nil {
		res = attrs
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}
