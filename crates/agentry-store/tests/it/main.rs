//! The integration tests of agentry-store, in one test binary.

#[macro_use]
mod conformance;
mod support;

mod memory;
mod postgres;
mod runtime_approval;
mod runtime_handle;
mod runtime_leases;
mod runtime_processes;
mod runtime_store_faults;
mod runtime_store_outages;
mod sqlite;
