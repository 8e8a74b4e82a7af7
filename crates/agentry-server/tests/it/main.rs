//! The run API through real HTTP: a server on a TCP port, driven by a plain HTTP client and an
//! SSE client, on SQLite files (and Postgres, when `AGENTRY_TEST_POSTGRES_URL` names a server).

mod common;

mod approvals;
mod clients;
mod fork;
mod hook_timings;
mod inspector;
mod recovery;
mod replay;
mod runs;
mod security;
mod sessions;
mod shared_store;
mod steps;
mod stream;
