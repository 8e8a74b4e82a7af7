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
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::collections::HashMap;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;

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
