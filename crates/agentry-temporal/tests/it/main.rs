//! The integration tests of agentry-temporal, in one test binary.

mod support;

mod batches_and_compaction;
mod deadlines;
mod durability;
mod fork;
mod no_worker;
mod redaction;
mod runs;
mod sub_agents;
mod worker_killed;
