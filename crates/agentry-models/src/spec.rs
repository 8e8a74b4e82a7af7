//! Models named by a `provider:model` string, configured from the environment.

use crate::Error;
use agentry_core::Model;
use std::sync::Arc;

/// The model a `provider:model` spec names, configured from the environment, as config files
/// and command lines name models:
///
/// The providers of features left out of the build are refused with an error naming the
/// feature.
///
/// | spec | client | environment |
/// |---|---|---|
/// | `openai:gpt-4.1` | [`OpenAi`] (Chat Completions, any compatible server) | `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_ORG_ID`, `OPENAI_PROJECT_ID` |
/// | `openai-responses:o4-mini` | [`OpenAiResponses`] | the same |
/// | `anthropic:claude-sonnet-4-5` | [`Anthropic`] | `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL` |
///
/// ```
/// let err = agentry_models::from_spec("gpt-4.1").err().unwrap();
/// assert!(err.to_string().contains("provider:model"));
/// ```
pub fn from_spec(spec: &str) -> Result<Arc<dyn Model>, Error> {
    let unknown = |reason: &str| Error::UnknownSpec {
        spec: spec.to_owned(),
        reason: reason.to_owned(),
    };
    let (provider, model) = spec
        .split_once(':')
        .ok_or_else(|| unknown("there is no `:` between provider and model"))?;
    if model.trim().is_empty() {
        return Err(unknown("the model name is empty"));
    }
    Ok(match provider.trim() {
        #[cfg(feature = "openai")]
        "openai" => Arc::new(crate::OpenAi::from_env(model)?),
        #[cfg(feature = "openai")]
        "openai-responses" => Arc::new(crate::OpenAiResponses::from_env(model)?),
        #[cfg(feature = "anthropic")]
        "anthropic" => Arc::new(crate::Anthropic::from_env(model)?),
        #[cfg(not(feature = "openai"))]
        "openai" | "openai-responses" => {
            return Err(unknown(
                "this build leaves out the OpenAI clients; enable the `openai` feature",
            ));
        }
        #[cfg(not(feature = "anthropic"))]
        "anthropic" => {
            return Err(unknown(
                "this build leaves out the Anthropic client; enable the `anthropic` feature",
            ));
        }
        other => {
            return Err(unknown(&format!(
                "`{other}` is not a provider (known: openai, openai-responses, anthropic)"
            )));
        }
    })
}
