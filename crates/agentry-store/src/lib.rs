//! Durable run stores for agentry: [`SqliteStore`] (a file, for one machine) and
//! [`PostgresStore`] (a server, for many), both implementations of agentry's
//! [`RunStore`](agentry_core::RunStore).
//!
//! They keep the contract of the trait (see [`agentry_core::store`]) as
//! [`MemoryStore`](agentry_core::MemoryStore) does, but across processes and restarts:
//! - a checkpoint appends: the messages its step added (each run's messages are an append-only
//!   log), its events and a small record of the run are written in one transaction, so a
//!   checkpoint costs the same at step 10 and step 10,000;
//! - a checkpoint follows one revision of its run (the number of its checkpoints written) and is
//!   written only at that revision, else it fails with
//!   [`StoreError::OutOfOrder`](agentry_core::StoreError) and changes nothing: when a commit
//!   fails, the checkpoints queued after it are refused, so a stored run is always one
//!   checkpoint whole, loadable and resumable once the store is back;
//! - a run's lease has a number and an expiry: the process that saves a run holds it until the
//!   expiry (each save and [renewal](agentry_core::RunStore::renew) moves it on; a save that
//!   pauses or ends the run releases it, and no renewal takes it back); a [claim](agentry_core::RunStore::claim) succeeds only
//!   when no process holds the lease ([`StoreError::Leased`](agentry_core::StoreError) otherwise)
//!   and moves its number on by one, atomically in the database, so of several processes
//!   claiming a run exactly one wins; a save or renewal under a stale lease fails with
//!   [`StoreError::Conflict`](agentry_core::StoreError) and changes nothing;
//! - events are numbered 1, 2, ... per run; listings are newest first;
//! - [`SqliteStore`] does its work on a thread of its own, committing the checkpoints that wait
//!   together in one transaction; it takes checkpoints handed over with
//!   [`save_queued`](agentry_core::RunStore::save_queued) without making the caller wait, so a
//!   run's end-of-step checkpoint and its next one share a commit.
//!
//! Each store creates or updates its schema (the tables `runs`, `run_messages`, `run_events` and `blobs`)
//! when it is opened, from migrations shipped inside the crate; runs stored by an older version
//! still load.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use agentry_core::{Checkpoint, Message, MessageLog, RecordedEvent, RunSnapshot, RunStore};
//! use agentry_store::SqliteStore;
//! use serde_json::json;
//!
//! let dir = std::env::temp_dir().join(format!("agentry-store-doc-{}", std::process::id()));
//! let store = SqliteStore::open(dir.join("runs.db")).await?;
//!
//! let mut snapshot: RunSnapshot = serde_json::from_value(json!({
//!     "version": 1, "run_id": "run-1", "agent": "helper", "messages": [], "state": null,
//!     "step": 0, "usage": {"input_tokens": 0, "output_tokens": 0},
//!     "model_calls": 0, "output_attempts": 0,
//! }))?;
//! snapshot.messages.push(Message::user("hello"));
//! // A runtime tracks what the log holds, so each checkpoint appends only what is new.
//! let log = MessageLog::new();
//! let append = log.append(&snapshot.messages);
//! let started = [RecordedEvent::now("run_started", json!({"agent": "helper"}))];
//! store
//!     .save(Checkpoint {
//!         snapshot: &snapshot,
//!         lease: 0,
//!         revision: append.revision, // 0: the run's first checkpoint
//!         appended: &append.appended,
//!         layout: &append.layout,
//!         events: &started,
//!         hold: None, // released: any process may claim the run
//!     })
//!     .await?;
//!
//! let stored = store.load("run-1").await?.expect("the run was saved");
//! assert_eq!((stored.snapshot, stored.lease, stored.revision), (snapshot, 0, 1));
//! assert_eq!(store.events("run-1").await?[0].seq, 1);
//! # drop(store);
//! # std::fs::remove_dir_all(dir)?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs, unreachable_pub)]

mod error;
mod migrations;
mod postgres;
mod rows;
mod sqlite;

pub use postgres::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_LOCK_TIMEOUT, PostgresOptions, PostgresStore};
pub use sqlite::{DEFAULT_BUSY_TIMEOUT, SqliteOptions, SqliteStore};

// The book's chapters whose samples use this crate, compiled and run as doc tests by
// `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/durability.md")]
mod book_durability {}
