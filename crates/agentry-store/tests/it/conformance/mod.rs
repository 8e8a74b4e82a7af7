//! The `RunStore` contract as tests, shared by every store: each test file opens its store and
//! instantiates the suite with `conformance_tests!`, one test per property.

use agentry_core::store::LogAppend;
use agentry_core::{
    Checkpoint, History, Message, MessageLog, PendingApproval, RecordedEvent, RunQuery,
    RunSnapshot, RunStatus, RunStore, RunSummary, StopReason, StoreError, StoredEvent, ToolCall,
    ToolResult, Usage,
};
use serde_json::json;
use std::any::Any;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
            queued_checkpoints_are_written_in_order_and_report_their_outcome,
            a_cancel_request_reaches_the_lease_holder_and_a_claim_clears_it,
            the_revision_counts_the_checkpoints_written_across_claims,
            a_checkpoint_that_does_not_follow_the_stored_revision_changes_nothing,
            after_a_failed_checkpoint_the_next_ones_are_refused_and_the_run_stays_whole,
            a_renewal_never_takes_back_a_released_lease,
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

fn assert_conflict(
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

pub async fn a_new_run_round_trips_with_lease_zero(s: &Stores) {
    let store = &*s.store;
    assert_eq!(store.load("run-1").await.unwrap(), None);

    let run = full_snapshot("run-1");
    save(store, &run, 0, &[]).await.unwrap();
    let stored = store
        .load("run-1")
        .await
        .unwrap()
        .expect("the run was saved");
    assert_eq!(stored.snapshot, run);
    assert_eq!(stored.lease, 0);
    // Another handle (process) sees the same run.
    let seen = s.other.load("run-1").await.unwrap().expect("saved for all");
    assert_eq!((seen.snapshot, seen.lease), (run.clone(), 0));

    // A later checkpoint under lease 0 replaces the snapshot and keeps the lease.
    let later = RunSnapshot {
        step: 5,
        stop: None,
        ..run
    };
    save(store, &later, 0, &[]).await.unwrap();
    let stored = store.load("run-1").await.unwrap().unwrap();
    assert_eq!((stored.snapshot, stored.lease), (later, 0));
}

pub async fn a_save_under_a_stale_lease_conflicts_and_changes_nothing(s: &Stores) {
    let store = &*s.store;
    let name = store.name().to_string();
    let first = snapshot("run-1");
    save(store, &first, 0, &[event("run_started", 1)])
        .await
        .unwrap();
    assert_eq!(
        s.other
            .claim("run-1", 0, RunStatus::Running, NO_HOLD)
            .await
            .unwrap(),
        1
    );

    // The process that loaded lease 0 lost the run: its save is refused, events and all.
    let stale = RunSnapshot {
        step: 9,
        ..first.clone()
    };
    let result = save(store, &stale, 0, &[event("step_finished", 2)]).await;
    assert_conflict(result, &name, "run-1", 0);
    let stored = store.load("run-1").await.unwrap().unwrap();
    assert_eq!((stored.snapshot, stored.lease), (first.clone(), 1));
    let events = store.events("run-1").await.unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].event, event("run_started", 1));

    // A lease the run never had is refused too; the current one is accepted.
    assert_conflict(save(store, &stale, 7, &[]).await, &name, "run-1", 7);
    assert_conflict(
        save(store, &stale, u64::MAX, &[]).await,
        &name,
        "run-1",
        u64::MAX,
    );
    save(store, &stale, 1, &[]).await.unwrap();
    assert_eq!(store.load("run-1").await.unwrap().unwrap().snapshot, stale);

    // A run that was never saved is not created by a save under another lease than 0.
    let result = save(store, &snapshot("run-2"), 3, &[event("x", 1)]).await;
    assert_conflict(result, &name, "run-2", 3);
    assert_eq!(store.load("run-2").await.unwrap(), None);
    assert!(store.events("run-2").await.unwrap().is_empty());
    assert_eq!(listed(store, &RunQuery::all()).await, ["run-1"]);
}

pub async fn a_claim_moves_the_lease_on_by_one(s: &Stores) {
    let store = &*s.store;
    let name = store.name().to_string();
    save(store, &snapshot("run-1"), 0, &[]).await.unwrap();

    assert_eq!(
        store
            .claim("run-1", 0, RunStatus::Running, NO_HOLD)
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.load("run-1").await.unwrap().unwrap().lease, 1);
    assert_conflict(
        store.claim("run-1", 0, RunStatus::Running, NO_HOLD).await,
        &name,
        "run-1",
        0,
    );
    assert_conflict(
        store.claim("run-1", 2, RunStatus::Running, NO_HOLD).await,
        &name,
        "run-1",
        2,
    );
    assert_eq!(
        s.other
            .claim("run-1", 1, RunStatus::Running, NO_HOLD)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store
            .claim("run-1", 2, RunStatus::Running, NO_HOLD)
            .await
            .unwrap(),
        3
    );
    assert_eq!(s.other.load("run-1").await.unwrap().unwrap().lease, 3);
    // Saving does not move the lease.
    save(store, &snapshot("run-1"), 3, &[]).await.unwrap();
    assert_eq!(store.load("run-1").await.unwrap().unwrap().lease, 3);
    // A claim made for a status the run is no longer in (a paused run another process has
    // meanwhile taken over and saved running) conflicts, even with the current lease.
    assert_conflict(
        store
            .claim("run-1", 3, RunStatus::AwaitingApproval, NO_HOLD)
            .await,
        &name,
        "run-1",
        3,
    );
    assert_eq!(store.load("run-1").await.unwrap().unwrap().lease, 3);
}

pub async fn of_two_concurrent_claims_exactly_one_wins(s: &Stores) {
    save(&*s.store, &snapshot("run-1"), 0, &[]).await.unwrap();
    for lease in 0..10 {
        let (a, b) = tokio::join!(
            s.store.claim("run-1", lease, RunStatus::Running, NO_HOLD),
            s.other.claim("run-1", lease, RunStatus::Running, NO_HOLD)
        );
        let (won, lost) = match (a, b) {
            (Ok(new), lost @ Err(_)) | (lost @ Err(_), Ok(new)) => (new, lost),
            other => panic!("round {lease}: expected exactly one winner, got {other:?}"),
        };
        assert_eq!(won, lease + 1);
        assert!(
            matches!(lost, Err(StoreError::Conflict { expected, .. }) if expected == lease),
            "round {lease}: {lost:?}"
        );
    }
    assert_eq!(s.store.load("run-1").await.unwrap().unwrap().lease, 10);
}

pub async fn concurrent_saves_of_one_run_land_whole_or_not_at_all(s: &Stores) {
    // Both handles save the same new run at once, following the same revision, again and
    // again: the first saves race to create it, the later ones to follow it. Of each round's
    // two, exactly one lands; the other is refused whole and changes nothing.
    let mut run = snapshot("run-1");
    for round in 0..5 {
        run.messages.push(Message::user(format!("round {round}")));
        let mine = [event("a", round * 10), event("b", round * 10 + 1)];
        let theirs = [event("c", round * 10 + 2), event("d", round * 10 + 3)];
        let (a, b) = tokio::join!(
            save(&*s.store, &run, 0, &mine),
            save(&*s.other, &run, 0, &theirs)
        );
        match (&a, &b) {
            (Ok(()), Err(StoreError::OutOfOrder { .. }))
            | (Err(StoreError::OutOfOrder { .. }), Ok(())) => {}
            // Both loaded after the other wrote: each followed the revision it found.
            (Ok(()), Ok(())) => {}
            other => panic!("round {round}: {other:?}"),
        }
    }
    assert_eq!(listed(&*s.store, &RunQuery::all()).await, ["run-1"]);
    let stored = s.store.load("run-1").await.unwrap().unwrap();
    assert_eq!(stored.snapshot, run, "every message, once each");
    let events = s.store.events("run-1").await.unwrap();
    let numbers: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(numbers, (1..=events.len() as u64).collect::<Vec<u64>>());
    assert_eq!(stored.revision as usize, events.len() / 2);
    // Each save's events stay together and in order.
    for pair in events.chunks(2) {
        let kinds = (pair[0].event.kind.as_str(), pair[1].event.kind.as_str());
        assert!(matches!(kinds, ("a", "b") | ("c", "d")), "{events:?}");
        assert_eq!(pair[0].event.at_ms + 1, pair[1].event.at_ms);
    }
}

pub async fn a_claim_of_an_unknown_run_is_not_found(s: &Stores) {
    let store = &*s.store;
    save(store, &snapshot("run-1"), 0, &[]).await.unwrap();
    match store.claim("run-2", 0, RunStatus::Running, NO_HOLD).await {
        Err(StoreError::NotFound {
            store: name,
            run_id,
        }) => {
            assert_eq!((name.as_str(), run_id.as_str()), (store.name(), "run-2"));
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert_eq!(store.load("run-2").await.unwrap(), None);
}

pub async fn events_are_numbered_from_one_across_saves(s: &Stores) {
    let store = &*s.store;
    let run = snapshot("run-1");
    let recorded = [
        event("run_started", 1),
        event("model_finished", 2),
        event("tool_started", 3),
        event("tool_finished", 4),
        event("step_finished", 5),
    ];
    save(store, &run, 0, &recorded[..2]).await.unwrap();
    save(store, &run, 0, &[]).await.unwrap();
    save(store, &run, 0, &recorded[2..]).await.unwrap();
    let expected: Vec<StoredEvent> = (1..)
        .zip(&recorded)
        .map(|(seq, e)| StoredEvent {
            seq,
            event: e.clone(),
        })
        .collect();
    assert_eq!(store.events("run-1").await.unwrap(), expected);
    assert_eq!(s.other.events("run-1").await.unwrap(), expected);

    // Numbering goes on under a new lease, and each run has its own.
    let lease = store
        .claim("run-1", 0, RunStatus::Running, NO_HOLD)
        .await
        .unwrap();
    save(&*s.other, &run, lease, &[event("run_resumed", 6)])
        .await
        .unwrap();
    let events = store.events("run-1").await.unwrap();
    let numbers: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6]);
    assert_eq!(events[5].event, event("run_resumed", 6));

    save(store, &snapshot("run-2"), 0, &[event("run_started", 7)])
        .await
        .unwrap();
    let other_run = store.events("run-2").await.unwrap();
    assert_eq!(
        other_run,
        [StoredEvent {
            seq: 1,
            event: event("run_started", 7)
        }]
    );
    assert!(store.events("unknown").await.unwrap().is_empty());
}

pub async fn listing_filters_and_puts_the_newest_first(s: &Stores) {
    let store = &*s.store;
    let run =
        |id: &str, agent: &str, session: Option<&str>, stop: Option<StopReason>| RunSnapshot {
            agent: agent.to_string(),
            session_id: session.map(str::to_string),
            stop,
            ..snapshot(id)
        };
    assert!(store.list(&RunQuery::all()).await.unwrap().is_empty());
    let r1 = run("r1", "planner", Some("s1"), None);
    let r2 = RunSnapshot {
        parent_run_id: Some("r1".to_string()),
        step: 3,
        ..run("r2", "coder", Some("s1"), Some(StopReason::FinalAnswer))
    };
    let r3 = run("r3", "planner", Some("s2"), Some(StopReason::FinalAnswer));
    let r4 = run("r4", "coder", None, Some(StopReason::Cancelled));
    let r5 = run("r5", "planner", Some("s1"), None);
    for r in [&r1, &r2, &r3, &r4, &r5] {
        save(store, r, 0, &[]).await.unwrap();
    }
    // Saving r1 again does not make it newer: listings follow first saves.
    save(store, &r1, 0, &[]).await.unwrap();

    assert_eq!(
        listed(store, &RunQuery::all()).await,
        ["r5", "r4", "r3", "r2", "r1"]
    );
    assert_eq!(
        listed(&*s.other, &RunQuery::all()).await,
        ["r5", "r4", "r3", "r2", "r1"]
    );
    assert_eq!(
        listed(store, &RunQuery::session("s1")).await,
        ["r5", "r2", "r1"]
    );
    assert_eq!(
        listed(store, &RunQuery::all().agent("coder")).await,
        ["r4", "r2"]
    );
    let finished = RunQuery::all().status(RunStatus::Finished);
    assert_eq!(listed(store, &finished).await, ["r3", "r2"]);
    let query = RunQuery::session("s1")
        .agent("planner")
        .status(RunStatus::Running);
    assert_eq!(listed(store, &query).await, ["r5", "r1"]);
    assert_eq!(listed(store, &RunQuery::all().limit(2)).await, ["r5", "r4"]);
    assert_eq!(
        listed(store, &RunQuery::session("s1").limit(1)).await,
        ["r5"]
    );
    assert!(listed(store, &RunQuery::all().limit(0)).await.is_empty());
    assert!(listed(store, &RunQuery::session("none")).await.is_empty());

    let summaries = store.list(&RunQuery::all().agent("coder")).await.unwrap();
    let RunSummary {
        created_ms,
        updated_ms,
        ..
    } = summaries[1];
    assert_eq!(
        summaries[1],
        RunSummary {
            run_id: "r2".to_string(),
            agent: "coder".to_string(),
            session_id: Some("s1".to_string()),
            parent_run_id: Some("r1".to_string()),
            status: RunStatus::Finished,
            step: 3,
            created_ms,
            updated_ms,
        }
    );
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        (now - 60_000..=now).contains(&created_ms) && created_ms <= updated_ms,
        "created {created_ms}, updated {updated_ms}, now {now}"
    );
    assert_eq!(summaries[0].session_id, None);
    let r1 = &store.list(&RunQuery::all()).await.unwrap()[4];
    assert!(r1.updated_ms >= r1.created_ms);
}

pub async fn the_status_follows_the_stop_reason(s: &Stores) {
    let store = &*s.store;
    let pending = PendingApproval {
        call_id: "call-1".to_string(),
        tool: "delete_file".to_string(),
        input: json!({"path": "notes.txt"}),
        reason: "deletes a file".to_string(),
    };
    let cases = [
        (None, RunStatus::Running),
        (
            Some(StopReason::AwaitingApproval {
                pending: vec![pending],
            }),
            RunStatus::AwaitingApproval,
        ),
        (Some(StopReason::Cancelled), RunStatus::Cancelled),
        (None, RunStatus::Running),
        (None, RunStatus::Failed),
        (None, RunStatus::Running),
        (Some(StopReason::FinalAnswer), RunStatus::Finished),
        (Some(StopReason::MaxSteps { limit: 3 }), RunStatus::Finished),
    ];
    let all = [
        RunStatus::Running,
        RunStatus::AwaitingApproval,
        RunStatus::Cancelled,
        RunStatus::Failed,
        RunStatus::Finished,
    ];
    for (stop, status) in cases {
        let run = RunSnapshot {
            stop: stop.clone(),
            error: (status == RunStatus::Failed).then(|| "the model is down".to_string()),
            ..snapshot("run-1")
        };
        save(store, &run, 0, &[]).await.unwrap();
        let summary = &store.list(&RunQuery::all()).await.unwrap()[0];
        assert_eq!(summary.status, status, "for {stop:?}");
        for other in all {
            let found = listed(store, &RunQuery::all().status(other)).await;
            assert_eq!(
                found.len(),
                usize::from(other == status),
                "{other} for {stop:?}"
            );
        }
        assert_eq!(
            store.load("run-1").await.unwrap().unwrap().snapshot.stop,
            stop
        );
    }
}

pub async fn a_held_lease_refuses_claims_until_released_or_expired(s: &Stores) {
    let store = &*s.store;
    let run = snapshot("run-1");
    // The process that saves a run holds its lease: nobody else may take the run over.
    save_holding(store, &run, 0, &[], Some(HOLD)).await.unwrap();
    for claimant in [&*s.store, &*s.other] {
        match claimant.claim("run-1", 0, RunStatus::Running, HOLD).await {
            Err(StoreError::Leased {
                run_id,
                remaining_ms,
                ..
            }) => {
                assert_eq!(run_id, "run-1");
                assert!(
                    remaining_ms > HOLD.as_millis() as u64 - 60_000,
                    "{remaining_ms}"
                );
            }
            other => panic!("expected the run to be leased, got {other:?}"),
        }
    }
    // The holder saves on under its lease, and releases it when the run pauses or ends.
    save_holding(store, &run, 0, &[], Some(HOLD)).await.unwrap();
    save_holding(store, &run, 0, &[], None).await.unwrap();
    assert_eq!(
        s.other
            .claim("run-1", 0, RunStatus::Running, HOLD)
            .await
            .unwrap(),
        1
    );
    // The new holder's lease is held in turn.
    assert!(matches!(
        store.claim("run-1", 1, RunStatus::Running, HOLD).await,
        Err(StoreError::Leased { .. })
    ));
    // A lease that is not renewed expires, and then the run may be claimed.
    save_holding(&*s.other, &run, 1, &[], Some(Duration::from_millis(1)))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        store
            .claim("run-1", 1, RunStatus::Running, HOLD)
            .await
            .unwrap(),
        2
    );
    // The process that let it expire is out: its saves conflict.
    assert_conflict(
        save_holding(&*s.other, &run, 1, &[], Some(HOLD)).await,
        store.name(),
        "run-1",
        1,
    );
}

pub async fn a_renewal_keeps_the_lease_and_a_lost_one_conflicts(s: &Stores) {
    let store = &*s.store;
    let run = snapshot("run-1");
    save_holding(store, &run, 0, &[], Some(Duration::from_millis(1)))
        .await
        .unwrap();
    store.renew("run-1", 0, HOLD).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    // Renewed past the first expiry: still held.
    assert!(matches!(
        s.other.claim("run-1", 0, RunStatus::Running, HOLD).await,
        Err(StoreError::Leased { .. })
    ));
    // Renewing with a lease the run does not have is a conflict; an unknown run is not found.
    assert_conflict(
        store.renew("run-1", 3, HOLD).await,
        store.name(),
        "run-1",
        3,
    );
    assert!(matches!(
        store.renew("run-9", 0, HOLD).await,
        Err(StoreError::NotFound { .. })
    ));
    // Once released and claimed by another, the old holder's renewal conflicts.
    save_holding(store, &run, 0, &[], None).await.unwrap();
    assert_eq!(
        s.other
            .claim("run-1", 0, RunStatus::Running, HOLD)
            .await
            .unwrap(),
        1
    );
    assert_conflict(
        store.renew("run-1", 0, HOLD).await,
        store.name(),
        "run-1",
        0,
    );
    s.other.renew("run-1", 1, HOLD).await.unwrap();
}

pub async fn checkpoints_append_messages_and_a_load_rebuilds_the_history(s: &Stores) {
    let store = &*s.store;
    let mut run = full_snapshot("run-1");
    run.stop = None;
    let mut log = MessageLog::new();
    let checkpoint = |run: &RunSnapshot, log: &mut MessageLog| {
        let append = log.append(&run.messages);
        log.saved(run.messages.clone(), append.layout.clone());
        append
    };
    let append = checkpoint(&run, &mut log);
    assert_eq!(append.appended.len(), 3);
    let save = |run: &RunSnapshot, append: LogAppend| {
        let run = run.clone();
        async move {
            store
                .save(Checkpoint {
                    snapshot: &run,
                    lease: 0,
                    revision: append.revision,
                    appended: &append.appended,
                    layout: &append.layout,
                    events: &[],
                    hold: None,
                })
                .await
        }
    };
    save(&run, append).await.unwrap();
    // Steps add messages: each checkpoint appends only its own.
    for i in 0..20 {
        run.messages.push(Message::user(format!("step {i}")));
        run.step += 1;
        let append = checkpoint(&run, &mut log);
        assert_eq!(append.appended.len(), 1);
        save(&run, append).await.unwrap();
    }
    let stored = s.other.load("run-1").await.unwrap().unwrap();
    assert_eq!(stored.snapshot, run);
    assert_eq!(
        stored.layout.as_ref().map(|l| (l.spans.len(), l.next)),
        Some((1, 23))
    );
    // A compaction folds messages into a summary: the log keeps them, the history skips them.
    run.messages
        .replace_range(1, 15, Message::user("summary of 14 messages"));
    run.messages.push(Message::assistant("after the summary"));
    let append = checkpoint(&run, &mut log);
    assert_eq!(append.appended.len(), 2);
    save(&run, append).await.unwrap();
    let stored = s.other.load("run-1").await.unwrap().unwrap();
    assert_eq!(stored.snapshot, run);
    assert_eq!(stored.snapshot.messages.len(), 11);
    assert_eq!(stored.layout.map(|l| l.next), Some(25));
}

/// Checkpoints handed over with `save_queued` (without waiting for each) are written in the
/// order they were handed over, and each outcome says whether it was written: one under a stale
/// lease conflicts and changes nothing.
pub async fn queued_checkpoints_are_written_in_order_and_report_their_outcome(s: &Stores) {
    let store = &*s.store;
    let mut run = snapshot("run-q");
    let mut log = MessageLog::new();
    let mut outcomes = Vec::new();
    for i in 0..10 {
        run.messages.push(Message::user(format!("step {i}")));
        run.step = i + 1;
        let append = log.append(&run.messages);
        // From none to two events a checkpoint: those written together are numbered on.
        let events: Vec<_> = (0..i % 3)
            .map(|k| event("step", i64::from(i * 10 + k)))
            .collect();
        let checkpoint = Checkpoint {
            snapshot: &run,
            lease: 0,
            revision: append.revision,
            appended: &append.appended,
            layout: &append.layout,
            events: &events,
            hold: Some(HOLD),
        };
        outcomes.push(store.save_queued(checkpoint, i % 2 == 0).await.unwrap());
        log.saved(run.messages.clone(), append.layout);
    }
    for outcome in outcomes {
        outcome.await.unwrap();
    }
    let stored = s.other.load("run-q").await.unwrap().unwrap();
    assert_eq!(stored.snapshot, run);
    let steps: Vec<u64> = s
        .other
        .events("run-q")
        .await
        .unwrap()
        .iter()
        .map(|e| e.event.data["n"].as_u64().unwrap())
        .collect();
    let expected: Vec<u64> = (0..10u64)
        .flat_map(|i| (0..i % 3).map(move |k| i * 10 + k))
        .collect();
    assert_eq!(steps, expected);

    // A stale lease: handed over fine, its outcome is a conflict, and nothing changed.
    let append = log.append(&run.messages);
    let mut stale = run.clone();
    stale.step = 99;
    let outcome = store
        .save_queued(
            Checkpoint {
                snapshot: &stale,
                lease: 7,
                revision: append.revision,
                appended: &append.appended,
                layout: &append.layout,
                events: &[],
                hold: None,
            },
            false,
        )
        .await;
    let conflict = match outcome {
        Ok(outcome) => outcome.await,
        Err(e) => Err(e),
    };
    assert!(
        matches!(conflict, Err(StoreError::Conflict { .. })),
        "{conflict:?}"
    );
    assert_eq!(
        s.other.load("run-q").await.unwrap().unwrap().snapshot.step,
        10
    );
}

pub async fn a_cancel_request_reaches_the_lease_holder_and_a_claim_clears_it(s: &Stores) {
    let store = &*s.store;
    let run = snapshot("run-1");
    save_holding(store, &run, 0, &[], Some(HOLD)).await.unwrap();
    assert!(!store.cancel_requested("run-1", 0).await.unwrap());
    assert!(
        !store
            .renew("run-1", 0, HOLD)
            .await
            .unwrap()
            .cancel_requested
    );
    // Another process asks; the holder sees it under its lease, and its next renewal says so.
    s.other.request_cancel("run-1").await.unwrap();
    assert!(store.cancel_requested("run-1", 0).await.unwrap());
    assert!(
        store
            .renew("run-1", 0, HOLD)
            .await
            .unwrap()
            .cancel_requested
    );
    assert!(!store.cancel_requested("run-1", 7).await.unwrap());
    assert!(matches!(
        s.other.request_cancel("run-9").await,
        Err(StoreError::NotFound { .. })
    ));
    // The run is released (cancelled there) and claimed again: the request is gone.
    save_holding(store, &run, 0, &[], None).await.unwrap();
    let lease = s
        .other
        .claim("run-1", 0, RunStatus::Running, HOLD)
        .await
        .unwrap();
    assert!(!s.other.cancel_requested("run-1", lease).await.unwrap());
    assert!(
        !s.other
            .renew("run-1", lease, HOLD)
            .await
            .unwrap()
            .cancel_requested
    );
}

/// A checkpoint of `run` under `lease` following `revision`, with what its history adds to
/// `log` (which is not told: the caller says whether it was written).
async fn save_following(
    store: &dyn RunStore,
    run: &RunSnapshot,
    lease: u64,
    log: &MessageLog,
    events: &[RecordedEvent],
    queued: bool,
) -> Result<agentry_core::QueuedSave, StoreError> {
    let append = log.append(&run.messages);
    store
        .save_queued(
            Checkpoint {
                snapshot: run,
                lease,
                revision: append.revision,
                appended: &append.appended,
                layout: &append.layout,
                events,
                hold: Some(HOLD),
            },
            queued,
        )
        .await
}

pub async fn the_revision_counts_the_checkpoints_written_across_claims(s: &Stores) {
    let store = &*s.store;
    let mut run = snapshot("run-1");
    save(store, &run, 0, &[]).await.unwrap();
    assert_eq!(store.load("run-1").await.unwrap().unwrap().revision, 1);
    for i in 0..3 {
        run.messages.push(Message::user(format!("m{i}")));
        save(store, &run, 0, &[]).await.unwrap();
    }
    let stored = s.other.load("run-1").await.unwrap().unwrap();
    assert_eq!((stored.revision, stored.lease), (4, 0));
    // A claim moves the lease on, not the revision: the next holder follows revision 4.
    let lease = s
        .other
        .claim("run-1", 0, RunStatus::Running, HOLD)
        .await
        .unwrap();
    assert_eq!(s.other.load("run-1").await.unwrap().unwrap().revision, 4);
    run.messages.push(Message::user("after the claim"));
    save(&*s.other, &run, lease, &[]).await.unwrap();
    let stored = store.load("run-1").await.unwrap().unwrap();
    assert_eq!((stored.revision, stored.lease), (5, lease));
    assert_eq!(stored.snapshot, run);
}

pub async fn a_checkpoint_that_does_not_follow_the_stored_revision_changes_nothing(s: &Stores) {
    let store = &*s.store;
    let mut run = snapshot("run-1");
    run.messages.push(Message::user("m0"));
    save(store, &run, 0, &[event("first", 1)]).await.unwrap();
    let stored = store.load("run-1").await.unwrap().unwrap();
    let layout = stored.layout.clone().unwrap();
    // Behind (a writer that did not see the last checkpoint) and ahead (built on a checkpoint
    // that was never written): both refused, naming both revisions, and nothing changes.
    for revision in [0, 2, 7] {
        let log = MessageLog::resumed(stored.snapshot.messages.clone(), layout.clone(), revision);
        let mut next = run.clone();
        next.step = 9;
        next.messages.push(Message::user("refused"));
        let outcome = match save_following(store, &next, 0, &log, &[event("no", 2)], false).await {
            Ok(outcome) => outcome.await,
            Err(e) => Err(e),
        };
        match outcome {
            Err(StoreError::OutOfOrder {
                run_id,
                revision: r,
                stored,
                ..
            }) => assert_eq!((run_id.as_str(), r, stored), ("run-1", revision, 1)),
            other => panic!("revision {revision}: expected OutOfOrder, got {other:?}"),
        }
    }
    let after = s.other.load("run-1").await.unwrap().unwrap();
    assert_eq!(after, stored);
    assert_eq!(s.other.events("run-1").await.unwrap().len(), 1);
    // A new run's first checkpoint follows revision 0; one following revision 1 of a run that was
    // never written is refused and creates nothing.
    let log = MessageLog::resumed(History::new(), Default::default(), 1);
    let outcome = match save_following(store, &snapshot("run-2"), 0, &log, &[], false).await {
        Ok(outcome) => outcome.await,
        Err(e) => Err(e),
    };
    assert!(
        matches!(outcome, Err(StoreError::OutOfOrder { stored: 0, .. })),
        "{outcome:?}"
    );
    assert!(s.other.load("run-2").await.unwrap().is_none());
}

/// The class of a failed commit with checkpoints pipelined after it: the first of three
/// checkpoints handed over without waiting fails (here under a lease the run does not have);
/// the two after it, built on it, are refused; the run stays at its last written checkpoint,
/// loads whole, and the writer goes on from there.
pub async fn after_a_failed_checkpoint_the_next_ones_are_refused_and_the_run_stays_whole(
    s: &Stores,
) {
    let store = &*s.store;
    let mut run = snapshot("run-1");
    run.messages.push(Message::user("m0"));
    let mut log = MessageLog::new();
    let first = save_following(store, &run, 0, &log, &[event("ok", 0)], false)
        .await
        .unwrap();
    first.await.unwrap();
    log.saved(run.messages.clone(), log.append(&run.messages).layout);
    let written = s.other.load("run-1").await.unwrap().unwrap();

    let mut outcomes = Vec::new();
    for (i, lease) in [(1, 5), (2, 0), (3, 0)] {
        run.messages.push(Message::user(format!("m{i}")));
        run.step = i;
        let handed = save_following(store, &run, lease, &log, &[event("lost", i.into())], true)
            .await
            .unwrap();
        log.handed(run.messages.clone(), log.append(&run.messages).layout);
        outcomes.push(handed);
    }
    let mut outcomes = outcomes.into_iter();
    let failed = outcomes.next().unwrap().await;
    assert!(
        matches!(failed, Err(StoreError::Conflict { .. })),
        "{failed:?}"
    );
    for outcome in outcomes {
        let refused = outcome.await;
        assert!(
            matches!(refused, Err(StoreError::OutOfOrder { stored: 1, .. })),
            "{refused:?}"
        );
    }
    let stored = s.other.load("run-1").await.unwrap().unwrap();
    assert_eq!(stored, written, "exactly the last written checkpoint");
    let kinds: Vec<String> = s
        .other
        .events("run-1")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event.kind)
        .collect();
    assert_eq!(kinds, ["ok"]);

    // The writer goes back to what was written, and saves the whole of it again.
    log.failed();
    let again = save_following(store, &run, 0, &log, &[event("again", 9)], false)
        .await
        .unwrap();
    again.await.unwrap();
    let stored = s.other.load("run-1").await.unwrap().unwrap();
    assert_eq!(stored.snapshot, run);
    assert_eq!(stored.revision, 2);
}

pub async fn a_renewal_never_takes_back_a_released_lease(s: &Stores) {
    let store = &*s.store;
    let run = snapshot("run-1");
    save_holding(store, &run, 0, &[], Some(HOLD)).await.unwrap();
    let renewal = store.renew("run-1", 0, HOLD).await.unwrap();
    assert!(!renewal.released);
    // The run pauses or ends: its save releases the lease. A renewal that comes after it (one
    // that raced it) renews nothing and says so.
    save_holding(store, &run, 0, &[], None).await.unwrap();
    for holder in [&*s.store, &*s.other] {
        let renewal = holder.renew("run-1", 0, HOLD).await.unwrap();
        assert!(renewal.released, "{renewal:?}");
    }
    // So the run can be claimed at once.
    assert_eq!(
        s.other
            .claim("run-1", 0, RunStatus::Running, HOLD)
            .await
            .unwrap(),
        1
    );
}
