//! The integration tests of agentry-models, in one test binary.

mod aimock;
mod transcript_server;

mod aimock_agents;
mod aimock_faults;
mod call_ids;
mod config_env;
mod llama_server;
mod model_deadlines;
mod sse_transcripts;
mod token_counting;
