//! The integration tests of agentry-local, in one test binary: the model cache and the
//! fetcher against a local package index, and the local model on real GGUF files.

mod common;

mod agent_run;
mod local_model;
mod model_cache;
mod pinned_outputs;
