//! Run traces exported to an OTLP endpoint: the `Telemetry` hook's spans (OpenTelemetry GenAI
//! conventions) through `tracing-opentelemetry` to a batching OTLP/HTTP exporter.
//!
//! Installed before the async runtime starts and shut down after it stopped: the exporter's
//! HTTP client blocks, on the batch processor's own thread.

use crate::cli::{Cli, Command};
use crate::config::TelemetryConfig;
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
    /// Installs what the command line and config ask for: a debug log on stderr with
    /// `--verbose` or `RUST_LOG`, and span export when the command runs agents and the config
    /// has a `[telemetry]` table (or `OTEL_EXPORTER_OTLP_ENDPOINT` is set). A config that cannot
    /// be read is left to the command to report; a telemetry set-up that fails is an error.
    pub(crate) fn start(cli: &Cli) -> Result<Option<Telemetry>, String> {
        let log = log_layer(cli.verbose);
        let export = match Self::export_config(cli) {
            Some(config) => Some(Telemetry::exporter(&config)?),
            None => None,
        };
        if log.is_none() && export.is_none() {
            return Ok(None);
        }
        let (spans, provider) = match export {
            Some(provider) => {
                let layer = tracing_opentelemetry::layer()
                    .with_tracer(provider.tracer("agentry"))
                    .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                        meta.target().starts_with("agentry")
                    }));
                (Some(layer), Some(provider))
            }
            None => (None, None),
        };
        let subscriber = tracing_subscriber::registry().with(spans).with(log);
        tracing::subscriber::set_global_default(subscriber)
            .map_err(|e| format!("telemetry: cannot install the trace subscriber: {e}"))?;
        Ok(provider.map(|provider| Telemetry { provider }))
    }

    /// The export the config asks for, when the command runs agents.
    fn export_config(cli: &Cli) -> Option<TelemetryConfig> {
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
            return None;
        }
        let file = crate::commands::load(cli).ok()?;
        match (&file.config.telemetry, std::env::var_os(ENDPOINT_ENV)) {
            (Some(config), _) => Some(config.clone()),
            (None, Some(_)) => Some(TelemetryConfig::default()),
            (None, None) => None,
        }
    }

    /// The batching OTLP exporter `config` describes.
    fn exporter(config: &TelemetryConfig) -> Result<SdkTracerProvider, String> {
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
        Ok(SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name(service).build())
            .build())
    }

    /// Sends the spans still buffered and stops the exporter.
    pub(crate) fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("warning: telemetry: the last spans may not have been exported: {e}");
        }
    }
}

/// agentry's log on stderr: `RUST_LOG`'s filter when set, else agentry's debug messages with
/// `--verbose`; none otherwise.
fn log_layer<S>(verbose: bool) -> Option<impl Layer<S>>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let filter = match std::env::var("RUST_LOG") {
        Ok(filter) if !filter.trim().is_empty() => filter,
        _ if verbose => "warn,opentelemetry=debug,opentelemetry_sdk=debug,opentelemetry_otlp=debug,agentry=debug,agentry_core=debug,agentry_runtime=debug,agentry_models=debug,agentry_external=debug,agentry_local=debug,agentry_mcp=debug,agentry_store=debug,agentry_tools=debug".to_owned(),
        _ => return None,
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&filter).unwrap_or_else(|e| {
        eprintln!("warning: RUST_LOG `{filter}` is not a log filter ({e}); logging warnings");
        tracing_subscriber::EnvFilter::new("warn")
    });
    Some(
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_filter(filter),
    )
}
