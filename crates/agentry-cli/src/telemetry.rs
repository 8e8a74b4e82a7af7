//! Run traces exported to an OTLP endpoint: the `Telemetry` hook's spans (OpenTelemetry GenAI
//! conventions) through `tracing-opentelemetry` to a batching OTLP/HTTP exporter.
//!
//! Installed before the async runtime starts and shut down after it stopped: the exporter's
//! HTTP client blocks, on the batch processor's own thread.

use crate::cli::{Cli, Command};
use crate::config::{LoadedConfig, TelemetryConfig};
use crate::project::expand_env;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;

/// An exporter whose first failure is said on stderr, naming the endpoint and the cause (the
/// SDK itself reports export failures only to its own diagnostics, which nobody sees).
#[derive(Debug)]
struct Reported<E> {
    inner: E,
    endpoint: String,
    warned: AtomicBool,
}

impl<E> Reported<E> {
    fn new(inner: E, endpoint: String) -> Self {
        Reported {
            inner,
            endpoint,
            warned: AtomicBool::new(false),
        }
    }

    fn warn(&self, error: &dyn std::fmt::Display) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            eprintln!(
                "warning: telemetry: spans could not be exported to {}: {error} (the run goes on; \
                 check [telemetry] otlp_endpoint or {ENDPOINT_ENV})",
                self.endpoint
            );
        }
    }
}

impl<E: SpanExporter> SpanExporter for Reported<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        if let Err(e) = &result {
            self.warn(e);
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporter in use; flushed and stopped by [`Telemetry::shutdown`].
pub(crate) struct Telemetry {
    provider: SdkTracerProvider,
}

/// The environment variable that turns export on without a `[telemetry]` table.
const ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

impl Telemetry {
    /// Starts exporting when the command runs agents and the config has a `[telemetry]` table
    /// (or `OTEL_EXPORTER_OTLP_ENDPOINT` is set). A config that cannot be read is left to the
    /// command to report; a telemetry set-up that fails is an error.
    pub(crate) fn start(cli: &Cli) -> Result<Option<Telemetry>, String> {
        let runs_agents = matches!(
            cli.command,
            Command::Run(_)
                | Command::Chat(_)
                | Command::Resume { .. }
                | Command::Approve { .. }
                | Command::Reject { .. }
                | Command::Mcp { .. }
        );
        if !runs_agents {
            return Ok(None);
        }
        let Ok(file) = LoadedConfig::find(cli.config.as_deref()) else {
            return Ok(None);
        };
        let config = match (&file.config.telemetry, std::env::var_os(ENDPOINT_ENV)) {
            (Some(config), _) => config.clone(),
            (None, Some(_)) => TelemetryConfig::default(),
            (None, None) => return Ok(None),
        };
        Telemetry::install(&config).map(Some)
    }

    fn install(config: &TelemetryConfig) -> Result<Telemetry, String> {
        let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http();
        if let Some(endpoint) = &config.otlp_endpoint {
            let endpoint =
                expand_env(endpoint).map_err(|e| format!("telemetry.otlp_endpoint: {e}"))?;
            exporter =
                exporter.with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')));
        }
        if !config.headers.is_empty() {
            let mut headers = HashMap::new();
            for (name, value) in &config.headers {
                let value =
                    expand_env(value).map_err(|e| format!("telemetry.headers.{name}: {e}"))?;
                headers.insert(name.clone(), value);
            }
            exporter = exporter.with_headers(headers);
        }
        let exporter = exporter
            .build()
            .map_err(|e| format!("telemetry: cannot set up the OTLP exporter: {e}"))?;
        let endpoint = match &config.otlp_endpoint {
            Some(endpoint) => expand_env(endpoint).unwrap_or_else(|_| endpoint.clone()),
            None => std::env::var(ENDPOINT_ENV)
                .unwrap_or_else(|_| "the default OTLP endpoint".to_owned()),
        };
        let exporter = Reported::new(exporter, endpoint);
        let service = config
            .service_name
            .clone()
            .unwrap_or_else(|| "agentry".to_owned());
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name(service).build())
            .build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("agentry"));
        let subscriber = tracing_subscriber::registry().with(layer.with_filter(
            tracing_subscriber::filter::filter_fn(|meta| meta.target().starts_with("agentry")),
        ));
        tracing::subscriber::set_global_default(subscriber)
            .map_err(|e| format!("telemetry: cannot install the trace subscriber: {e}"))?;
        Ok(Telemetry { provider })
    }

    /// Sends the spans still buffered and stops the exporter.
    pub(crate) fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("warning: telemetry: the last spans may not have been exported: {e}");
        }
    }
}
