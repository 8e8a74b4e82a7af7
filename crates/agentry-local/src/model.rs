//! [`LocalModel`]: a GGUF model run in-process on the CPU, behind the core `Model` trait.

use crate::extract::ToolCallExtractor;
use crate::gate::TextGate;
use crate::generate::{Emitted, Engine, Finish, Generation, Outcome};
use crate::sampling::Sampling;
use crate::template::ChatTemplate;
use crate::tokenizer::{GgufTokenizer, from_metadata};
use crate::weights::{LoadProgress, load};
use crate::{CachePrecision, CatalogModel, Error, ModelCache};
use agentry_core::{
    FinishReason, Model, ModelError, ModelErrorKind, ModelEvent, ModelRequest, ModelStream,
    TokenCounter, Usage,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A small instruction-tuned model, loaded from a GGUF file and run on the CPU.
///
/// It renders the model's own chat template (tools included), streams text as it is generated,
/// and turns tool calls the model writes as text — `<tool_call>` tags, or a JSON object with
/// `name` and `arguments`, fenced or bare — into real tool calls, accepted only when the name is
/// a declared tool and the arguments validate against its schema. Supported architectures:
/// `llama` (SmolLM2, Llama) and `qwen2` (Qwen2, Qwen2.5).
///
/// Cloning is cheap and shares the weights. Turns run one at a time per model (the CPU is the
/// limit); the keys and values of the previous turn's prompt are reused when the next prompt
/// starts with it, as an agent's growing conversation does.
///
/// ```no_run
/// use agentry_local::{LocalModel, SMOLLM2_135M};
/// # fn demo() -> Result<(), agentry_local::Error> {
/// let model = LocalModel::cached(&SMOLLM2_135M)?.temperature(0.0).load()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LocalModel {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    path: PathBuf,
    architecture: String,
    context_limit: usize,
    threads: usize,
    sampling: Sampling,
    tokenizer: GgufTokenizer,
    template: ChatTemplate,
    engine: Mutex<Engine>,
    /// Random per loaded model, so call ids differ across processes (a resumed run keeps the
    /// ids of its earlier turns).
    call_id_seed: u32,
    turns: AtomicU64,
}

/// Settings of a [`LocalModel`] before it loads.
pub struct LocalModelBuilder {
    path: PathBuf,
    name: Option<String>,
    sampling: Sampling,
    context_limit: Option<usize>,
    cache_precision: CachePrecision,
    threads: Option<usize>,
    progress: Option<Box<dyn FnMut(LoadProgress) + Send>>,
}

impl std::fmt::Debug for LocalModelBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModelBuilder")
            .field("path", &self.path)
            .field("name", &self.name)
            .field("sampling", &self.sampling)
            .field("context_limit", &self.context_limit)
            .field("cache_precision", &self.cache_precision)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl LocalModelBuilder {
    /// The model's name in events and errors (default: `local:<file stem>`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// All sampling settings at once.
    pub fn sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = sampling;
        self
    }

    /// Softmax temperature (0, the default, decodes greedily).
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.sampling.temperature = temperature;
        self
    }

    /// Nucleus sampling mass.
    pub fn top_p(mut self, top_p: f64) -> Self {
        self.sampling.top_p = Some(top_p);
        self
    }

    /// Sample among the `k` most likely tokens only.
    pub fn top_k(mut self, k: usize) -> Self {
        self.sampling.top_k = Some(k);
        self
    }

    /// The random seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.sampling.seed = seed;
        self
    }

    /// The repeat penalty (1.0 turns it off; default 1.1 over the last 64 tokens).
    pub fn repeat_penalty(mut self, penalty: f32) -> Self {
        self.sampling.repeat_penalty = penalty;
        self
    }

    /// The most tokens one turn may produce, unless the request sets `max_tokens`.
    pub fn max_tokens(mut self, max_tokens: usize) -> Self {
        self.sampling.max_tokens = max_tokens;
        self
    }

    /// Caps the context (prompt plus output) below what the model supports, to bound memory.
    pub fn context_limit(mut self, tokens: usize) -> Self {
        self.context_limit = Some(tokens);
        self
    }

    /// Stores the key/value cache as `precision` says (default [`CachePrecision::F32`], exact;
    /// [`CachePrecision::F16`] halves the cache's memory and what each token reads of it).
    pub fn cache_precision(mut self, precision: CachePrecision) -> Self {
        self.cache_precision = precision;
        self
    }

    /// Computes on `threads` threads (default: one per core the process may use).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads.max(1));
        self
    }

    /// Called as the file is read, with bytes read and the file's size.
    pub fn on_progress(mut self, progress: impl FnMut(LoadProgress) + Send + 'static) -> Self {
        self.progress = Some(Box::new(progress));
        self
    }

    /// Loads the model. Blocking: it reads the whole file (use [`load_async`](Self::load_async)
    /// on an async runtime).
    pub fn load(self) -> Result<LocalModel, Error> {
        let LocalModelBuilder {
            path,
            name,
            sampling,
            context_limit,
            cache_precision,
            threads,
            progress,
        } = self;
        let mut progress = progress.unwrap_or_else(|| Box::new(|_| {}));
        let threads = threads.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        let gguf = load(
            &path,
            context_limit,
            cache_precision,
            threads,
            &mut progress,
        )?;
        let tokenizer = from_metadata(&path, &gguf.metadata)?;
        let source = gguf
            .metadata
            .get("tokenizer.chat_template")
            .and_then(|v| v.to_string().ok());
        let template = ChatTemplate::new(
            &path,
            source.map(String::as_str),
            tokenizer.bos_text.clone(),
            tokenizer.eos_text.clone(),
        )?;
        let name = name.unwrap_or_else(|| {
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            format!("local:{stem}")
        });
        let context_limit = gguf.transformer.context_length();
        Ok(LocalModel {
            inner: Arc::new(Inner {
                name,
                path,
                architecture: gguf.architecture,
                context_limit,
                threads,
                sampling,
                tokenizer,
                template,
                engine: Mutex::new(Engine::new(gguf.transformer)),
                call_id_seed: fastrand::u32(..),
                turns: AtomicU64::new(0),
            }),
        })
    }

    /// Loads the model on tokio's blocking pool.
    pub async fn load_async(self) -> Result<LocalModel, Error> {
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || self.load())
            .await
            .unwrap_or_else(|e| {
                Err(Error::Load {
                    path,
                    reason: format!("the loading task failed: {e}"),
                })
            })
    }
}

impl LocalModel {
    /// Settings for the GGUF file at `path`.
    pub fn builder(path: impl Into<PathBuf>) -> LocalModelBuilder {
        LocalModelBuilder {
            path: path.into(),
            name: None,
            sampling: Sampling::default(),
            context_limit: None,
            cache_precision: CachePrecision::default(),
            threads: None,
            progress: None,
        }
    }

    /// Loads the GGUF file at `path` with default settings (blocking).
    pub fn load(path: impl Into<PathBuf>) -> Result<LocalModel, Error> {
        LocalModel::builder(path).load()
    }

    /// Settings for a catalog model found in the cache named by the environment
    /// ([`ModelCache::from_env`]); a missing or corrupt file is an error naming the command
    /// that fetches it. Blocking (the first time, it hashes the file).
    pub fn cached(model: &CatalogModel) -> Result<LocalModelBuilder, Error> {
        LocalModel::in_cache(&ModelCache::from_env(), model)
    }

    /// Settings for a catalog model found in `cache`.
    pub fn in_cache(cache: &ModelCache, model: &CatalogModel) -> Result<LocalModelBuilder, Error> {
        let path = cache.locate(model)?;
        Ok(LocalModel::builder(path).name(format!("local:{}", model.id)))
    }

    /// The file the model was loaded from.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The architecture named in the file (`llama`, `qwen2`).
    pub fn architecture(&self) -> &str {
        &self.inner.architecture
    }

    /// The most tokens a turn's prompt and output may add up to.
    pub fn context_limit(&self) -> usize {
        self.inner.context_limit
    }

    /// The threads a turn computes on.
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// The sampling settings turns start from.
    pub fn sampling(&self) -> &Sampling {
        &self.inner.sampling
    }

    /// How many tokens `text` is to this model.
    pub fn count_tokens(&self, text: &str) -> usize {
        self.inner
            .tokenizer
            .tokenizer
            .encode(text, false)
            .map_or(0, |e| e.get_ids().len())
    }

    /// The prompt a request turns into: the model's chat template applied to the conversation
    /// and tools, ending where the model's answer starts.
    pub fn render_prompt(&self, request: &ModelRequest) -> Result<String, ModelError> {
        self.inner
            .template
            .render(request)
            .map_err(|m| self.inner.error(ModelErrorKind::InvalidRequest, m))
    }
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("name", &self.inner.name)
            .field("path", &self.inner.path)
            .field("architecture", &self.inner.architecture)
            .field("context_limit", &self.inner.context_limit)
            .finish_non_exhaustive()
    }
}

impl Inner {
    fn error(&self, kind: ModelErrorKind, message: impl Into<String>) -> ModelError {
        ModelError::new(self.name.clone(), kind, message)
    }

    /// Renders, tokenizes and generates one turn, sending text pieces and progress to `tx`
    /// (blocking).
    fn generate(
        &self,
        request: &ModelRequest,
        tx: tokio::sync::mpsc::Sender<Emitted>,
    ) -> Result<Outcome, ModelError> {
        let prompt = self
            .template
            .render(request)
            .map_err(|m| self.error(ModelErrorKind::InvalidRequest, m))?;
        tracing::trace!(model = %self.name, %prompt, "rendered prompt");
        let encoding = self
            .tokenizer
            .tokenizer
            .encode(prompt.as_str(), false)
            .map_err(|e| {
                self.error(
                    ModelErrorKind::Other,
                    format!("cannot tokenize the prompt: {e}"),
                )
            })?;
        let mut tokens = Vec::with_capacity(encoding.len() + 1);
        if let Some((bos, text)) = &self.tokenizer.bos
            && !prompt.starts_with(text.as_str())
        {
            tokens.push(*bos);
        }
        tokens.extend_from_slice(encoding.get_ids());
        if tokens.len() >= self.context_limit {
            return Err(self.error(
                ModelErrorKind::ContextTooLong,
                format!(
                    "the prompt is {} tokens but the model's context holds {}; shorten the \
                     conversation or compact it, or use a model with a longer context",
                    tokens.len(),
                    self.context_limit
                ),
            ));
        }
        let sampling = self.sampling.with_params(&request.params);
        let turn = Generation {
            prompt: &tokens,
            max_tokens: sampling.max_tokens.min(self.context_limit - tokens.len()),
            sampling: &sampling,
            stop_tokens: &self.tokenizer.stop_tokens,
            stop_sequences: &request.params.stop,
        };
        let mut engine = self.engine.lock().unwrap_or_else(|p| p.into_inner());
        engine
            .generate(&self.tokenizer.tokenizer, &turn, &mut |piece| {
                tx.blocking_send(piece).is_ok()
            })
            .map_err(|e| self.error(ModelErrorKind::Other, format!("generation failed: {e}")))
    }
}

/// A local model's own tokenizer, as a [`TokenCounter`].
struct LocalTokenCounter(LocalModel);

impl TokenCounter for LocalTokenCounter {
    fn name(&self) -> &str {
        &self.0.inner.name
    }
    fn count(&self, text: &str) -> usize {
        self.0.count_tokens(text)
    }
}

impl Model for LocalModel {
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// The model's own tokenizer (from its GGUF file).
    fn token_counter(&self) -> Option<Arc<dyn TokenCounter>> {
        Some(Arc::new(LocalTokenCounter(self.clone())))
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        let inner = Arc::clone(&self.inner);
        let request = request.clone();
        Box::pin(async_stream::stream! {
            let turn = inner.turns.fetch_add(1, Ordering::Relaxed);
            let extractor = ToolCallExtractor::new(&request.tools);
            let mut gate = TextGate::new(!request.tools.is_empty());
            let (tx, mut rx) = tokio::sync::mpsc::channel::<Emitted>(64);
            let worker = Arc::clone(&inner);
            let task = tokio::task::spawn_blocking(move || worker.generate(&request, tx));
            while let Some(emitted) = rx.recv().await {
                match emitted {
                    Emitted::Text(piece) => {
                        if let Some(text) = gate.push(&piece).filter(|t| !t.is_empty()) {
                            yield Ok(ModelEvent::TextDelta(text));
                        }
                    }
                    Emitted::Progress(progress) => yield Ok(ModelEvent::Progress(progress)),
                }
            }
            let outcome = match task.await {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(error)) => {
                    yield Err(error);
                    return;
                }
                Err(join) => {
                    yield Err(inner.error(ModelErrorKind::Other, format!("the generation task failed: {join}")));
                    return;
                }
            };
            let (_, held) = gate.finish();
            let prefix = format!("call_{:08x}_{turn}_", inner.call_id_seed);
            let extracted = extractor.extract(&held, &prefix);
            if !held.is_empty() {
                tracing::debug!(
                    model = %inner.name,
                    output = %held,
                    calls = extracted.calls.len(),
                    "read tool calls from the held-back output"
                );
            }
            if !extracted.text.is_empty() {
                yield Ok(ModelEvent::TextDelta(extracted.text));
            }
            let calls = !extracted.calls.is_empty();
            for call in extracted.calls {
                yield Ok(ModelEvent::ToolCall(call));
            }
            let mut usage = Usage::new(outcome.prompt_tokens as u64, outcome.output_tokens as u64);
            usage.cached_input_tokens = outcome.reused_tokens as u64;
            yield Ok(ModelEvent::Usage(usage));
            yield Ok(ModelEvent::Finish(match outcome.finish {
                _ if calls => FinishReason::ToolCalls,
                Finish::Length => FinishReason::Length,
                Finish::Stop | Finish::Cancelled => FinishReason::Stop,
            }));
        })
    }
}
