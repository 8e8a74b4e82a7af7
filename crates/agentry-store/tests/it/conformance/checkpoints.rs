//! Checkpoints: round trips, stale leases, concurrent and queued saves, revisions, failed
//! commits.

use agentry_core::store::LogAppend;
use agentry_core::{
    Checkpoint, History, Message, MessageLog, RecordedEvent, RunQuery, RunSnapshot, RunStatus,
    RunStore, StoreError,
};

use super::*;

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

/// A checkpoint of `run` under `lease` following `revision`, with what its history adds to
/// `log` (which is not told: the caller says whether it was written).
pub(super) async fn save_following(
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

/// Messages with images, documents and audio (bytes, URLs, a tool's image result) load back
/// whole, bytes included; the recorded event of such a message holds the media by reference.
pub async fn messages_with_media_round_trip_and_events_hold_references(s: &Stores) {
    use agentry_core::content::{Media, Part};
    use std::sync::Arc;
    let store = &*s.store;
    let image = Part::image(
        (0..=255u8).cycle().take(70_000).collect::<Vec<_>>(),
        "image/png",
    );
    let ask = Message::user([
        Part::text("what are these?"),
        image.clone(),
        Part::file(b"%PDF-1.7 ...".to_vec(), "application/pdf", "invoice.pdf"),
        Part::image_url("https://example.com/cat.jpg"),
        Part::audio(b"RIFF....WAVE".to_vec(), "audio/wav"),
        Part::File(Media::url("https://example.com/a.txt", "text/plain").named("a.txt")),
    ]);
    let result = Message::Tool(ToolResult::ok("c1", "chart", [Part::text("chart:"), image]));
    let mut run = snapshot("media-1");
    run.messages.push(ask.clone());
    run.messages.push(result.clone());
    let recorded = agentry_core::RunEvent::Message {
        message: Arc::new(ask.clone()),
        agent_path: "helper".into(),
        run_id: None,
    }
    .to_recorded()
    .unwrap();
    save(store, &run, 0, &[recorded]).await.unwrap();
    let stored = s.other.load("media-1").await.unwrap().unwrap();
    let messages: Vec<&Message> = stored.snapshot.messages.iter().collect();
    assert_eq!(messages, [&ask, &result]);
    let bytes = |m: &Message| -> Vec<Option<usize>> {
        m.content()
            .unwrap()
            .media()
            .map(|p| p.media().unwrap().data().map(<[u8]>::len))
            .collect()
    };
    assert_eq!(
        bytes(messages[0]),
        [Some(70_000), Some(12), None, Some(12), None],
        "every part's bytes are back"
    );
    let events = s.other.events("media-1").await.unwrap();
    let part = &events[0].event.data["message"]["content"][1];
    assert_eq!(part["size"], 70_000, "{part}");
    assert!(
        part.get("data").is_none(),
        "the event holds a reference: {part}"
    );
}

/// A store gives a message's media bytes back by their digest (what readers of recorded events,
/// which hold media by reference, ask for); an unknown digest is `None`.
pub async fn media_bytes_are_read_back_by_digest(s: &Stores) {
    use agentry_core::content::{BlobDigest, Part};
    let image = Part::image(vec![9u8; 5_000], "image/png");
    let mut run = snapshot("blob-1");
    run.messages
        .push(Message::user([Part::text("see"), image.clone()]));
    save(&*s.store, &run, 0, &[]).await.unwrap();
    let blob = image.media().unwrap().blob().unwrap();
    let found = s
        .other
        .blob(blob.digest())
        .await
        .unwrap()
        .expect("the bytes by digest");
    assert_eq!(found.bytes().map(|b| b.len()), Some(5_000));
    assert_eq!(found.digest(), blob.digest());
    assert!(
        s.other
            .blob(BlobDigest::of(b"none"))
            .await
            .unwrap()
            .is_none()
    );
}
