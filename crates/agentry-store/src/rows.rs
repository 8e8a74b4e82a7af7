//! What both stores share: the conversions between agentry's types and stored columns, and the
//! listing query.

use agentry_core::store::now_ms;
use agentry_core::{
    RecordedEvent, RunQuery, RunSnapshot, RunStatus, RunSummary, StoreError, StoredEvent,
};
use sqlx::{Database, Encode, QueryBuilder, Type};

/// What a checkpoint writes into its run's row.
pub(crate) struct RunRow<'a> {
    pub run_id: &'a str,
    pub agent: &'a str,
    pub session_id: Option<&'a str>,
    pub parent_run_id: Option<&'a str>,
    /// The stored name of the snapshot's status.
    pub status: &'static str,
    pub step: i64,
    /// The time of the save, in milliseconds since the Unix epoch.
    pub now_ms: i64,
    /// The snapshot as JSON text.
    pub snapshot: String,
}

impl<'a> RunRow<'a> {
    /// The row of `snapshot`, saved now.
    pub(crate) fn of(store: &str, snapshot: &'a RunSnapshot) -> Result<RunRow<'a>, StoreError> {
        Ok(RunRow {
            run_id: &snapshot.run_id,
            agent: &snapshot.agent,
            session_id: snapshot.session_id.as_deref(),
            parent_run_id: snapshot.parent_run_id.as_deref(),
            status: snapshot.status().as_str(),
            step: i64::from(snapshot.step),
            now_ms: now_ms(),
            snapshot: snapshot_json(store, snapshot)?,
        })
    }
}

/// The error of a save or claim under `lease`, which is not the run's current lease.
pub(crate) fn conflict(store: &str, run_id: &str, lease: u64) -> StoreError {
    StoreError::Conflict {
        store: store.to_string(),
        run_id: run_id.to_string(),
        expected: lease,
    }
}

/// The columns of a listing, in the order [`list_query`] selects them: run id, agent, session,
/// parent run, status, step, created and updated (ms).
pub(crate) type SummaryColumns = (
    String,
    String,
    Option<String>,
    Option<String>,
    String,
    i64,
    i64,
    i64,
);

/// The columns of an event, in the order both stores select them: seq, at (ms), kind, data (JSON
/// text).
pub(crate) type EventColumns = (i64, i64, String, String);

/// A lease as stored. Leases are counted from 0 and move on by one per claim, so they stay far
/// below `i64::MAX`; a larger one can be no run's current lease, and becomes -1, which matches
/// none.
pub(crate) fn lease_param(lease: u64) -> i64 {
    i64::try_from(lease).unwrap_or(-1)
}

/// A stored lease, checked.
pub(crate) fn lease(store: &str, run_id: &str, stored: i64) -> Result<u64, StoreError> {
    u64::try_from(stored).map_err(|_| unreadable(store, run_id, format!("its lease is {stored}")))
}

/// The JSON text of a snapshot, as stored.
fn snapshot_json(store: &str, snapshot: &RunSnapshot) -> Result<String, StoreError> {
    serde_json::to_string(snapshot).map_err(|e| {
        StoreError::backend(
            store,
            format!(
                "saving run `{}`: its snapshot cannot be written as JSON ({e}); check the \
                 values its state and metadata hold",
                snapshot.run_id
            ),
        )
    })
}

/// A stored snapshot, read back.
pub(crate) fn snapshot(store: &str, run_id: &str, json: &str) -> Result<RunSnapshot, StoreError> {
    serde_json::from_str(json)
        .map_err(|e| unreadable(store, run_id, format!("its snapshot does not parse: {e}")))
}

/// One line of a listing, read back.
pub(crate) fn summary(store: &str, columns: SummaryColumns) -> Result<RunSummary, StoreError> {
    let (run_id, agent, session_id, parent_run_id, status, step, created_ms, updated_ms) = columns;
    let Some(status) = RunStatus::parse(&status) else {
        return Err(unreadable(
            store,
            &run_id,
            format!("its status `{status}` is none agentry knows"),
        ));
    };
    let Ok(step) = u32::try_from(step) else {
        return Err(unreadable(store, &run_id, format!("its step is {step}")));
    };
    Ok(RunSummary {
        run_id,
        agent,
        session_id,
        parent_run_id,
        status,
        step,
        created_ms,
        updated_ms,
    })
}

/// One event of `run_id`, read back.
pub(crate) fn event(
    store: &str,
    run_id: &str,
    columns: EventColumns,
) -> Result<StoredEvent, StoreError> {
    let (seq, at_ms, kind, data) = columns;
    let seq = u64::try_from(seq)
        .map_err(|_| unreadable(store, run_id, format!("an event's number is {seq}")))?;
    let data = serde_json::from_str(&data).map_err(|e| {
        unreadable(
            store,
            run_id,
            format!("the data of its event {seq} does not parse: {e}"),
        )
    })?;
    Ok(StoredEvent {
        seq,
        event: RecordedEvent { at_ms, kind, data },
    })
}

/// The listing query for `query`: its filters as bound parameters, newest first, its limit.
pub(crate) fn list_query<DB>(query: &RunQuery) -> QueryBuilder<DB>
where
    DB: Database,
    DB::Arguments: Default,
    String: for<'a> Encode<'a, DB> + Type<DB>,
    i64: for<'a> Encode<'a, DB> + Type<DB>,
{
    let mut sql = QueryBuilder::new(
        "SELECT run_id, agent, session_id, parent_run_id, status, step, created_ms, updated_ms \
         FROM runs WHERE TRUE",
    );
    if let Some(session_id) = &query.session_id {
        sql.push(" AND session_id = ").push_bind(session_id.clone());
    }
    if let Some(agent) = &query.agent {
        sql.push(" AND agent = ").push_bind(agent.clone());
    }
    if let Some(status) = query.status {
        sql.push(" AND status = ")
            .push_bind(status.as_str().to_string());
    }
    sql.push(" ORDER BY position DESC");
    if let Some(limit) = query.limit {
        sql.push(" LIMIT ").push_bind(i64::from(limit));
    }
    sql
}

/// A record of `run_id` that cannot be read back, and why.
fn unreadable(store: &str, run_id: &str, why: String) -> StoreError {
    StoreError::backend(
        store,
        format!(
            "the stored record of run `{run_id}` is unreadable: {why}; it was written by an \
             incompatible version of agentry or changed by hand"
        ),
    )
}
