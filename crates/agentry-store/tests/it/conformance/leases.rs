//! Leases: claims, renewals, releases and cancel requests.

use agentry_core::{RunStatus, StoreError};
use std::time::Duration;

use super::*;

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

pub async fn a_run_whose_lease_lapsed_while_running_has_no_driver(s: &Stores) {
    use agentry_core::RunQuery;
    let store = &*s.store;
    let now = || agentry_core::store::now_ms();
    let run = snapshot("run-1");
    // Driven: its lease is held, for about as long as was asked.
    save_holding(store, &run, 0, &[], Some(HOLD)).await.unwrap();
    let stored = store.load("run-1").await.unwrap().unwrap();
    let left = stored.lease_remaining(now()).as_millis() as u64;
    assert!(
        left > HOLD.as_millis() as u64 - 60_000 && left <= HOLD.as_millis() as u64,
        "{left}"
    );
    assert!(!stored.driver_gone(now()));
    let listed = &s.other.list(&RunQuery::all()).await.unwrap()[0];
    assert_eq!(listed.lease_expires_ms, stored.lease_expires_ms);
    assert!(!listed.driver_gone(now()));
    // Its driver stops renewing (killed): once the lease lapses, the run has no driver.
    save_holding(store, &run, 0, &[], Some(Duration::from_millis(1)))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let stored = s.other.load("run-1").await.unwrap().unwrap();
    assert!(stored.driver_gone(now()));
    assert_eq!(stored.lease_remaining(now()), Duration::ZERO);
    assert!(s.other.list(&RunQuery::all()).await.unwrap()[0].driver_gone(now()));
    // A run that paused or ended released its lease: it has no driver, and is not running.
    let mut ended = snapshot("run-2");
    ended.stop = Some(agentry_core::StopReason::FinalAnswer);
    save(store, &ended, 0, &[]).await.unwrap();
    let stored = store.load("run-2").await.unwrap().unwrap();
    assert_eq!(stored.lease_expires_ms, 0);
    assert!(!stored.driver_gone(now()), "an ended run is not a lost one");
}
