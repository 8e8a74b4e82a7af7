//! Which model a program runs: the local default unless `AGENTRY_MODEL` names another.

use crate::{CatalogModel, DEFAULT_MODEL, Error, LoadProgress, LocalModel, ModelCache};
use std::path::PathBuf;

/// The environment variable that names the model: `local` (the default), `local:<catalog id>`,
/// `local:<path to a .gguf file>`, or a hosted provider's `provider:model` spec
/// (`openai:gpt-4.1-mini`, `anthropic:claude-sonnet-4-5`, ...), which this crate hands back to
/// the caller to build (see [`ModelChoice::load`]).
pub const MODEL_ENV: &str = "AGENTRY_MODEL";

/// A model named by a spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelChoice {
    /// A catalog model, from the model cache.
    Catalog(CatalogModel),
    /// A GGUF file.
    File(PathBuf),
    /// A hosted provider's `provider:model` spec.
    Hosted(String),
}

/// What [`ModelChoice::load`] gives back: a local model, loaded, or the spec of a hosted model
/// for the caller to build with the provider client of its choice.
#[derive(Clone, Debug)]
pub enum LoadedChoice {
    /// A local model, loaded and ready to run.
    Local(LocalModel),
    /// A hosted provider's `provider:model` spec, untouched: this crate has no provider clients
    /// (`agentry_models::from_spec` builds one from such a spec).
    Hosted(String),
}

impl ModelChoice {
    /// The model `AGENTRY_MODEL` names; the local default when it is unset or empty.
    pub fn from_env() -> Result<ModelChoice, Error> {
        ModelChoice::parse(&std::env::var(MODEL_ENV).unwrap_or_default())
    }

    /// The model `spec` names.
    ///
    /// ```
    /// use agentry_local::{ModelChoice, DEFAULT_MODEL, SMOLLM2_135M};
    /// assert_eq!(ModelChoice::parse("").unwrap(), ModelChoice::Catalog(DEFAULT_MODEL));
    /// assert_eq!(ModelChoice::parse("local:smollm2-135m").unwrap(), ModelChoice::Catalog(SMOLLM2_135M));
    /// assert!(matches!(ModelChoice::parse("local:./m.gguf").unwrap(), ModelChoice::File(_)));
    /// assert_eq!(
    ///     ModelChoice::parse("openai:gpt-4.1-mini").unwrap(),
    ///     ModelChoice::Hosted("openai:gpt-4.1-mini".into())
    /// );
    /// assert!(ModelChoice::parse("local:gpt-9").is_err());
    /// ```
    pub fn parse(spec: &str) -> Result<ModelChoice, Error> {
        let spec = spec.trim();
        if spec.is_empty() || spec == "local" {
            return Ok(ModelChoice::Catalog(DEFAULT_MODEL));
        }
        match spec.strip_prefix("local:") {
            Some(name) if name.ends_with(".gguf") || name.contains(std::path::MAIN_SEPARATOR) => {
                Ok(ModelChoice::File(PathBuf::from(name)))
            }
            Some(name) => CatalogModel::find(name).map(ModelChoice::Catalog),
            None => Ok(ModelChoice::Hosted(spec.to_owned())),
        }
    }

    /// Whether this model runs in this process.
    pub fn is_local(&self) -> bool {
        !matches!(self, ModelChoice::Hosted(_))
    }

    /// Loads a local model (on the blocking pool), with `progress` called as its file is read;
    /// a catalog model must already be in the cache ([`Fetcher`](crate::Fetcher) puts it
    /// there). A hosted spec is handed back as it is, for the caller to build:
    ///
    /// ```no_run
    /// use agentry_core::Model;
    /// use agentry_local::{LoadedChoice, ModelChoice};
    /// use std::sync::Arc;
    ///
    /// # async fn demo(
    /// #     hosted: impl Fn(&str) -> Result<Arc<dyn Model>, Box<dyn std::error::Error>>,
    /// # ) -> Result<(), Box<dyn std::error::Error>> {
    /// let model: Arc<dyn Model> = match ModelChoice::from_env()?.load(|_| {}).await? {
    ///     LoadedChoice::Local(model) => Arc::new(model),
    ///     // `agentry_models::from_spec(&spec)?`, say.
    ///     LoadedChoice::Hosted(spec) => hosted(&spec)?,
    /// };
    /// # Ok(()) }
    /// ```
    pub async fn load(
        &self,
        progress: impl FnMut(LoadProgress) + Send + 'static,
    ) -> Result<LoadedChoice, Error> {
        let builder = match self {
            ModelChoice::Hosted(spec) => return Ok(LoadedChoice::Hosted(spec.clone())),
            ModelChoice::File(path) => LocalModel::builder(path),
            ModelChoice::Catalog(model) => {
                let (model, cache) = (*model, ModelCache::from_env());
                let path = cache.path(&model);
                tokio::task::spawn_blocking(move || LocalModel::in_cache(&cache, &model))
                    .await
                    .map_err(|e| Error::Load {
                        path,
                        reason: format!("the lookup task failed: {e}"),
                    })??
            }
        };
        let model = builder.on_progress(progress).load_async().await?;
        Ok(LoadedChoice::Local(model))
    }
}

impl std::fmt::Display for ModelChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelChoice::Catalog(m) => write!(f, "local:{} ({})", m.id, m.title),
            ModelChoice::File(p) => write!(f, "local:{}", p.display()),
            ModelChoice::Hosted(spec) => f.write_str(spec),
        }
    }
}
