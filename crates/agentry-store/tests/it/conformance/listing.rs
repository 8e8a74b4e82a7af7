//! What a store reads back besides a run: its events, the listing, the status.

use agentry_core::{
    PendingApproval, RunQuery, RunSnapshot, RunStatus, RunSummary, StopReason, StoredEvent,
};
use serde_json::json;
use std::time::{SystemTime, UNIX_EPOCH};

use super::*;

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
    // A reader that saw the first two reads the rest.
    assert_eq!(store.events_after("run-1", 2).await.unwrap(), expected[2..]);
    assert_eq!(s.other.events_after("run-1", 0).await.unwrap(), expected);
    assert!(store.events_after("run-1", 5).await.unwrap().is_empty());
    assert!(store.events_after("unknown", 0).await.unwrap().is_empty());
    // A reader of a long history takes it a page at a time.
    assert_eq!(
        store.events_page("run-1", 0, 2).await.unwrap(),
        expected[..2]
    );
    assert_eq!(
        s.other.events_page("run-1", 2, 2).await.unwrap(),
        expected[2..4]
    );
    assert_eq!(
        store.events_page("run-1", 4, 2).await.unwrap(),
        expected[4..]
    );
    assert!(store.events_page("run-1", 5, 2).await.unwrap().is_empty());
    assert_eq!(store.events_page("run-1", 0, 100).await.unwrap(), expected);
    // Where a reader that follows the run from now on begins.
    assert_eq!(store.last_event_seq("run-1").await.unwrap(), 5);
    assert_eq!(s.other.last_event_seq("run-1").await.unwrap(), 5);
    assert_eq!(store.last_event_seq("unknown").await.unwrap(), 0);

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
    assert_eq!(store.last_event_seq("run-1").await.unwrap(), 6);

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
    assert_eq!(store.last_event_seq("run-2").await.unwrap(), 1);
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
        usage: agentry_core::Usage {
            cached_input_tokens: 9,
            ..agentry_core::Usage::new(1234, 56)
        },
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
    // r2 is r1's sub-agent's run.
    assert_eq!(
        listed(store, &RunQuery::all().top_level()).await,
        ["r5", "r4", "r3", "r1"]
    );
    assert_eq!(
        listed(
            &*s.other,
            &RunQuery::session("s1").top_level().limit(1).before("r5")
        )
        .await,
        ["r1"]
    );
    // Paging: the next page starts after the last run of the one before, filters kept.
    assert_eq!(
        listed(store, &RunQuery::all().limit(2).before("r4")).await,
        ["r3", "r2"]
    );
    assert_eq!(
        listed(&*s.other, &RunQuery::all().limit(2).before("r2")).await,
        ["r1"]
    );
    assert_eq!(
        listed(store, &RunQuery::session("s1").before("r5")).await,
        ["r2", "r1"]
    );
    assert!(
        listed(store, &RunQuery::all().before("r1"))
            .await
            .is_empty()
    );
    assert!(
        listed(store, &RunQuery::all().before("unknown"))
            .await
            .is_empty()
    );
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
            // A finished run's lease is released.
            lease_expires_ms: 0,
            // Its tokens, in and out.
            usage: agentry_core::Usage::new(1234, 56),
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
