//! OpenTelemetry, on when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`) is set:
//! the operation spans the pipeline opens (`coord.operation`: the operation, the agent,
//! the outcome, the time in the store) and the MCP door's (`tools/call <tool>`, named
//! and attributed as OpenTelemetry's MCP and GenAI conventions say) are exported over
//! OTLP/HTTP from whichever process runs them — `coord serve`, the repository's
//! coordinator process behind `coord mcp`, a one-shot command. Off, nothing is built:
//! no exporter, no thread, and the spans' call sites stay disabled (a load and a branch).

use opentelemetry_sdk::trace::SdkTracerProvider;
use std::time::Duration;

/// The spans exported: coord's own, not its dependencies'.
const PREFIX: &str = "coord.";

/// The tracer provider, when the environment asks for one; `None` also when the exporter
/// cannot be built (said on stderr: telemetry never stops coord).
pub fn provider() -> Option<SdkTracerProvider> {
    let on = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|e| !e.is_empty()));
    if !on {
        return None;
    }
    use opentelemetry_otlp::{SpanExporter, WithExportConfig as _};
    // reqwest is built without a TLS provider of its own: coord's (an https endpoint).
    coord_remote::install_crypto_provider();
    // The endpoint comes from the environment as the specification says (`/v1/traces`
    // appended to OTEL_EXPORTER_OTLP_ENDPOINT).
    let exporter = SpanExporter::builder()
        .with_http()
        .with_timeout(Duration::from_secs(3))
        .build()
        .map_err(|e| eprintln!("coord: OpenTelemetry exporter not started: {e}"))
        .ok()?;
    let batch = opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter)
        .with_batch_config(
            opentelemetry_sdk::trace::BatchConfigBuilder::default()
                .with_scheduled_delay(Duration::from_millis(500))
                .build(),
        )
        .build();
    let service = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "coord".into());
    Some(
        SdkTracerProvider::builder()
            .with_span_processor(batch)
            .with_resource(
                opentelemetry_sdk::Resource::builder()
                    .with_service_name(service)
                    .build(),
            )
            .build(),
    )
}

/// The layer that turns coord's spans into OpenTelemetry spans.
pub fn layer<S>(provider: &SdkTracerProvider) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::Layer as _;
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("coord"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_filter(tracing_subscriber::filter::filter_fn(|m| {
            m.is_span() && m.name().starts_with(PREFIX)
        }))
}

/// Exports what is still queued, waiting at most a few seconds (at the process's end).
pub fn shutdown(provider: SdkTracerProvider) {
    if let Err(e) = provider.shutdown_with_timeout(Duration::from_secs(3)) {
        eprintln!("coord: OpenTelemetry spans not all exported: {e}");
    }
}
