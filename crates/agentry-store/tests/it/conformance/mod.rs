//! The `RunStore` contract as tests, shared by every store: each test file opens its store and
//! instantiates the suite with `conformance_tests!`, one test per property.

use agentry_core::{
    Checkpoint, History, Message, MessageLog, RecordedEvent, RunQuery, RunSnapshot, RunStore,
    StopReason, StoreError, ToolCall, ToolResult, Usage,
};
use serde_json::json;
use std::any::Any;
use std::time::Duration;

mod checkpoints;
mod leases;
mod listing;
mod round_trips;

pub use checkpoints::*;
pub use leases::*;
pub use listing::*;
pub use round_trips::*;

/// How long a test's claim holds a lease when it must stay held: longer than any test.
pub const HOLD: Duration = Duration::from_secs(600);

/// A claim that holds nothing: the lease is free again at once (for tests of lease numbers).
pub const NO_HOLD: Duration = Duration::ZERO;

/// One test's store, fresh and empty, with a second handle on the same data.
pub struct Stores {
    /// The store under test.
    pub store: Box<dyn RunStore>,
    /// Another handle on the same runs, as a second process would open it (for the file and
    /// server stores, another connection pool).
    pub other: Box<dyn RunStore>,
    /// Whatever must outlive the stores (a temporary directory, a test database): dropped
    /// after them, it removes what the test set up.
    pub _cleanup: Option<Box<dyn Any + Send>>,
}

/// One test per property of the contract, for the stores that `$open` (an expression giving a
/// future of `Option<Stores>`; `None` skips the test) opens.
macro_rules! conformance_tests {
    ($open:expr) => {
        conformance_tests!(@each $open;
            a_new_run_round_trips_with_lease_zero,
            a_save_under_a_stale_lease_conflicts_and_changes_nothing,
            a_claim_moves_the_lease_on_by_one,
            of_two_concurrent_claims_exactly_one_wins,
            concurrent_saves_of_one_run_land_whole_or_not_at_all,
            a_claim_of_an_unknown_run_is_not_found,
            events_are_numbered_from_one_across_saves,
            listing_filters_and_puts_the_newest_first,
            the_status_follows_the_stop_reason,
            a_held_lease_refuses_claims_until_released_or_expired,
            a_renewal_keeps_the_lease_and_a_lost_one_conflicts,
            checkpoints_append_messages_and_a_load_rebuilds_the_history,
            messages_with_media_round_trip_and_events_hold_references,
            media_bytes_are_read_back_by_digest,
            queued_checkpoints_are_written_in_order_and_report_their_outcome,
            a_cancel_request_reaches_the_lease_holder_and_a_claim_clears_it,
            the_revision_counts_the_checkpoints_written_across_claims,
            a_checkpoint_that_does_not_follow_the_stored_revision_changes_nothing,
            after_a_failed_checkpoint_the_next_ones_are_refused_and_the_run_stays_whole,
            a_renewal_never_takes_back_a_released_lease,
            a_run_whose_lease_lapsed_while_running_has_no_driver,
            any_history_round_trips,
        );
    };
    (@each $open:expr; $($property:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $property() {
                if let Some(stores) = $open.await {
                    $crate::conformance::$property(&stores).await;
                }
            }
        )*
    };
}

/// A run with only what every run has.
pub fn snapshot(run_id: &str) -> RunSnapshot {
    RunSnapshot::new(run_id, "helper")
}

/// A run with every field set.
pub fn full_snapshot(run_id: &str) -> RunSnapshot {
    let metadata = json!({"tenant": "acme", "priority": 2, "nested": {"z": 1, "a": [1.5, null]}});
    RunSnapshot {
        parent_run_id: Some("parent-1".to_string()),
        agent: "researcher".to_string(),
        session_id: Some("session-1".to_string()),
        user_id: Some("user-1".to_string()),
        tags: vec!["nightly".to_string(), "ünïcødé ✓".to_string()],
        metadata: metadata.as_object().cloned().unwrap(),
        messages: History::from(vec![
            Message::system("You are careful."),
            Message::user("What's the weather in Paris? Say \"please\"."),
            Message::assistant("Let me check."),
        ]),
        state: json!({"notes": ["a", "b"], "count": 3, "ratio": 0.25, "big": u64::MAX}),
        step: 4,
        usage: Usage {
            input_tokens: 1200,
            output_tokens: 345,
            cached_input_tokens: 1000,
            cache_write_input_tokens: 7,
            reasoning_tokens: 12,
        },
        retried_usage: Usage::new(300, 45),
        model_calls: 4,
        output_attempts: 1,
        pending_tool_calls: vec![ToolCall::new(
            "call-1",
            "get_weather",
            &json!({"city": "Paris"}),
        )],
        pending_batch: Some(agentry_core::hooks::BatchPlan {
            order: vec![0],
            blocked: vec![(
                1,
                ToolResult::error("call-2", "get_weather", "Rome is closed today"),
            )],
        }),
        stop: Some(StopReason::FinalAnswer),
        output: Some(json!({"answer": "sunny", "confidence": 0.9})),
        ..snapshot(run_id)
    }
}

/// An event of `kind`, at a fixed time derived from it.
pub fn event(kind: &str, n: i64) -> RecordedEvent {
    RecordedEvent {
        at_ms: 1_700_000_000_000 + n,
        kind: kind.to_string(),
        data: json!({"n": n, "kind": kind}),
    }
}

/// Saves `snapshot` under `lease` with `events`, appending to the run's log what its history
/// adds to the stored one and following its stored revision (as a runtime resuming it would),
/// and releasing the lease.
pub async fn save(
    store: &dyn RunStore,
    snapshot: &RunSnapshot,
    lease: u64,
    events: &[RecordedEvent],
) -> Result<(), StoreError> {
    save_holding(store, snapshot, lease, events, None).await
}

/// [`save`], holding the lease for `hold` (`None` releases it).
pub async fn save_holding(
    store: &dyn RunStore,
    snapshot: &RunSnapshot,
    lease: u64,
    events: &[RecordedEvent],
    hold: Option<Duration>,
) -> Result<(), StoreError> {
    let log = match store.load(&snapshot.run_id).await? {
        Some(stored) => MessageLog::of_stored(&stored),
        None => MessageLog::new(),
    };
    let append = log.append(&snapshot.messages);
    store
        .save(Checkpoint {
            snapshot,
            lease,
            revision: append.revision,
            appended: &append.appended,
            layout: &append.layout,
            events,
            hold,
        })
        .await
}

/// The run ids of a listing, in its order.
pub async fn listed(store: &dyn RunStore, query: &RunQuery) -> Vec<String> {
    let found = store.list(query).await.expect("listing runs");
    found.into_iter().map(|s| s.run_id).collect()
}

pub(super) fn assert_conflict(
    result: Result<impl std::fmt::Debug, StoreError>,
    store: &str,
    run: &str,
    at: u64,
) {
    match result {
        Err(StoreError::Conflict {
            store: s,
            run_id,
            expected,
        }) => assert_eq!((s.as_str(), run_id.as_str(), expected), (store, run, at)),
        other => panic!("expected a conflict on `{run}` at lease {at}, got {other:?}"),
    }
}
