//! The model an agent names: the local default, a local file, a hosted provider, or scripted
//! turns played back from a file.

use crate::config::LoadedConfig;
use crate::progress::Progress;
use agentry::{Message, Model, ModelRequest, ScriptedModel, ScriptedTurn};
use agentry_local::{FetchProgress, Fetcher, LoadedChoice, ModelCache, ModelChoice};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Loads models once per spec: agents that name the same model share it.
#[derive(Default)]
pub(crate) struct Models {
    loaded: Mutex<HashMap<String, Arc<dyn Model>>>,
    /// Show no progress (`--json`).
    pub quiet: bool,
    /// Check specs without loading anything: each agent gets a stand-in model that never runs
    /// (`config check`, `hooks list`).
    pub check_only: bool,
}

impl Models {
    /// A loader; `quiet` shows no progress, `check_only` loads nothing.
    pub(crate) fn new(quiet: bool, check_only: bool) -> Self {
        Models {
            loaded: Mutex::default(),
            quiet,
            check_only,
        }
    }

    /// The model `spec` names; `scripted:` and `local:` file paths are relative to `file`'s
    /// directory.
    pub(crate) async fn get(
        &self,
        spec: &str,
        file: &LoadedConfig,
    ) -> Result<Arc<dyn Model>, ModelError> {
        if let Some(model) = self.loaded.lock().expect("not poisoned").get(spec) {
            return Ok(model.clone());
        }
        let model = self.load(spec, file).await?;
        self.loaded
            .lock()
            .expect("not poisoned")
            .insert(spec.to_owned(), model.clone());
        Ok(model)
    }

    async fn load(&self, spec: &str, file: &LoadedConfig) -> Result<Arc<dyn Model>, ModelError> {
        if let Some(path) = spec.trim().strip_prefix("scripted:") {
            return Ok(scripted(&file.resolve(path))?);
        }
        let choice = match spec.trim().strip_prefix("local:") {
            Some(path) if path.ends_with(".gguf") => ModelChoice::File(file.resolve(path)),
            _ => ModelChoice::parse(spec).map_err(|e| e.to_string())?,
        };
        if self.check_only {
            if let ModelChoice::File(path) = &choice
                && !path.is_file()
            {
                return Err(format!("there is no model file {}", path.display()).into());
            }
            if let ModelChoice::Hosted(spec) = &choice {
                // Parses the spec and reads its key from the environment, connecting nowhere.
                hosted(spec)?;
            }
            return Ok(Arc::new(ScriptedModel::new().named(choice.to_string())));
        }
        if let ModelChoice::Hosted(spec) = &choice {
            return Ok(hosted(spec)?);
        }
        if let ModelChoice::Catalog(model) = &choice {
            // Shown only when there is something to download.
            let mut progress: Option<Progress> = None;
            let label = format!("fetching {} ({}) once", model.id, model.title);
            Fetcher::new(ModelCache::from_env())
                .fetch(model, |p| {
                    if let FetchProgress::Downloading { bytes, total, .. } = p {
                        progress
                            .get_or_insert_with(|| Progress::bytes(label.clone(), self.quiet))
                            .update(bytes, total);
                    }
                })
                .await
                .map_err(|e| ModelError::Unavailable(e.to_string()))?;
            if let Some(progress) = progress {
                progress.finish(&format!("fetched {} and checked its sha256", model.id));
            }
        }
        let started = Instant::now();
        let progress = Arc::new(Progress::bytes(format!("loading {choice}"), self.quiet));
        let updates = progress.clone();
        let loaded = choice
            .load(move |p| updates.update(p.bytes, p.total))
            .await
            .map_err(|e| ModelError::Unavailable(e.to_string()))?;
        let model: Arc<dyn Model> = match loaded {
            LoadedChoice::Local(model) => Arc::new(model),
            LoadedChoice::Hosted(spec) => hosted(&spec)?,
        };
        let message = format!(
            "loaded {} in {:.1} s",
            model.name(),
            started.elapsed().as_secs_f64()
        );
        match Arc::try_unwrap(progress) {
            Ok(progress) => progress.finish(&message),
            Err(_) if !self.quiet => eprintln!("{message}"),
            Err(_) => {}
        }
        Ok(model)
    }
}

/// Why a model could not be had.
#[derive(Debug)]
pub(crate) enum ModelError {
    /// The config names it wrongly (an unknown model, a missing key, a bad file).
    Config(String),
    /// It could not be fetched or loaded (the network, the disk): not the config's fault.
    Unavailable(String),
}

impl From<String> for ModelError {
    fn from(message: String) -> Self {
        ModelError::Config(message)
    }
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelError::Config(m) | ModelError::Unavailable(m) => f.write_str(m),
        }
    }
}

/// A hosted provider's client, built from its `provider:model` spec and configured from the
/// environment (it connects nowhere until it is called).
fn hosted(spec: &str) -> Result<Arc<dyn Model>, String> {
    agentry_models::from_spec(spec).map_err(|e| e.to_string())
}

/// One model turn in a `scripted:` file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnFile {
    /// Text the model answers with.
    #[serde(default)]
    text: Option<String>,
    /// Tool calls it makes.
    #[serde(default)]
    tool_calls: Vec<CallFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallFile {
    name: String,
    #[serde(default)]
    input: Value,
}

/// A model that plays back the turns of a JSON file (`[{"tool_calls": [{"name": "Read",
/// "input": {...}}]}, {"text": "Done."}]`), one per model call. The turn is chosen by how many
/// assistant turns the history already holds, so a run resumed in another process goes on
/// where it was.
fn scripted(path: &Path) -> Result<Arc<dyn Model>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read the scripted model's turns {}: {e}",
            path.display()
        )
    })?;
    let turns: Vec<TurnFile> = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: {e}; a scripted model's file is a JSON array of turns, each {{\"text\": \"...\"}} and/or {{\"tool_calls\": [{{\"name\": \"...\", \"input\": {{...}}}}]}}",
            path.display()
        )
    })?;
    let turns: Vec<ScriptedTurn> = turns
        .into_iter()
        .map(|t| {
            let mut turn = ScriptedTurn::new();
            if let Some(text) = t.text {
                turn = turn.with_text(text);
            }
            for call in t.tool_calls {
                turn = turn.with_tool_call(call.name, call.input);
            }
            turn
        })
        .collect();
    let name = format!("scripted:{}", path.display());
    let model = ScriptedModel::from_fn(move |_, req: &ModelRequest| {
        let answered = req
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        turns
            .get(answered)
            .cloned()
            .unwrap_or_else(|| ScriptedTurn::text("(the scripted model has no more turns)"))
    })
    .named(name);
    Ok(Arc::new(model))
}
