//! What both stores share: the conversions between agentry's types and stored columns, and the
//! listing query.

use agentry_core::content::{Blob, BlobDigest};
use agentry_core::store::record::{self, SnapshotRecord};
use agentry_core::store::{attach_media, detach_media, history_from_log, missing_blobs};
use agentry_core::{
    Checkpoint, Message, RecordedEvent, Renewal, RunQuery, RunStatus, RunSummary, StoreError,
    StoredEvent, StoredRun,
};
use serde::Serialize;
use sqlx::{Database, Encode, QueryBuilder, Type};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// What a checkpoint writes: its run's row, the messages it appends to the run's log and its
/// events. It serializes as the JSON object the SQLite store's batched write reads.
#[derive(Serialize)]
pub(crate) struct SaveRow<'a> {
    pub id: &'a str,
    pub agent: &'a str,
    pub session: Option<&'a str>,
    pub parent: Option<&'a str>,
    /// The stored name of the snapshot's status.
    pub status: &'static str,
    pub step: i64,
    pub lease: i64,
    /// The run's revision the checkpoint follows.
    pub revision: i64,
    /// How long the lease is held from now, in ms (`None` releases it).
    pub hold: Option<i64>,
    /// The snapshot without its messages, and their layout.
    pub record: SnapshotRecord<'a>,
    /// The log position of the first appended message.
    pub first: i64,
    /// The appended messages, their media by reference.
    pub messages: std::borrow::Cow<'a, [Arc<Message>]>,
    pub events: &'a [RecordedEvent],
    /// The bytes of the appended messages' media, once per content, for the `blobs` table.
    #[serde(skip)]
    pub blobs: Vec<Blob>,
}

impl<'a> SaveRow<'a> {
    /// The row of `checkpoint`.
    pub(crate) fn of(checkpoint: &Checkpoint<'a>) -> SaveRow<'a> {
        let snapshot = checkpoint.snapshot;
        let first = checkpoint.layout.next - checkpoint.appended.len() as u64;
        let (messages, blobs) = detach_media(checkpoint.appended);
        SaveRow {
            id: &snapshot.run_id,
            agent: &snapshot.agent,
            session: snapshot.session_id.as_deref(),
            parent: snapshot.parent_run_id.as_deref(),
            status: snapshot.status().as_str(),
            step: i64::from(snapshot.step),
            lease: count_param(checkpoint.lease),
            revision: count_param(checkpoint.revision),
            hold: checkpoint.hold.map(millis),
            record: SnapshotRecord::new(snapshot, checkpoint.layout),
            first: i64::try_from(first).unwrap_or(i64::MAX),
            messages,
            events: checkpoint.events,
            blobs,
        }
    }
}

/// A duration in whole milliseconds, as stored.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// JSON text of a checkpoint's parts, or a backend error of `store` saying what could not be
/// written.
pub(crate) fn json_text(
    store: &str,
    run_id: &str,
    value: &impl Serialize,
) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| {
        StoreError::backend(
            store,
            format!(
                "saving run `{run_id}`: it cannot be written as JSON ({e}); check the values its \
                 state, metadata and messages hold"
            ),
        )
    })
}

/// How a claim that changed nothing failed, from what the run's row holds now (`None`: no row).
pub(crate) fn claim_refused(
    store: &str,
    run_id: &str,
    lease: u64,
    status: RunStatus,
    now_ms: i64,
    found: Option<(i64, String, i64)>,
) -> StoreError {
    match found {
        None => StoreError::NotFound {
            store: store.to_string(),
            run_id: run_id.to_string(),
        },
        Some((current, stored_status, expires_ms))
            if current == count_param(lease) && stored_status == status.as_str() =>
        {
            StoreError::Leased {
                store: store.to_string(),
                run_id: run_id.to_string(),
                remaining_ms: u64::try_from(expires_ms.saturating_sub(now_ms)).unwrap_or(0),
            }
        }
        Some(_) => conflict(store, run_id, lease),
    }
}

/// What a renewal of `lease` that changed nothing says, from what the run's row holds now (its
/// lease and expiry; `None`: no row): the lease was released, taken over, or the run is unknown.
pub(crate) fn renewal_refused(
    store: &str,
    run_id: &str,
    lease: u64,
    found: Option<(i64, i64)>,
) -> Result<Renewal, StoreError> {
    match found {
        None => Err(StoreError::NotFound {
            store: store.to_string(),
            run_id: run_id.to_string(),
        }),
        Some((current, 0)) if current == count_param(lease) => Ok(Renewal::lease_released()),
        Some(_) => Err(conflict(store, run_id, lease)),
    }
}

/// Why a checkpoint under `lease` following `revision` was not written, from what the run's row
/// holds now (its lease and revision; `None`: no row, which is a run at revision 0 under lease
/// 0): taken over by another lease, or at another revision.
pub(crate) fn save_refused(
    store: &str,
    run_id: &str,
    lease: u64,
    revision: u64,
    found: Option<(i64, i64)>,
) -> StoreError {
    let (current, stored) = found.unwrap_or((0, 0));
    if current != count_param(lease) {
        return conflict(store, run_id, lease);
    }
    StoreError::OutOfOrder {
        store: store.to_string(),
        run_id: run_id.to_string(),
        revision,
        stored: u64::try_from(stored).unwrap_or(0),
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
/// parent run, status, step, created and updated (ms), lease expiry (ms), and the input and
/// output tokens of the usage its record holds.
pub(crate) type SummaryColumns = (
    String,
    String,
    Option<String>,
    Option<String>,
    String,
    i64,
    i64,
    i64,
    i64,
    Option<i64>,
    Option<i64>,
);

/// The columns of an event, in the order both stores select them: seq, at (ms), kind, data (JSON
/// text).
pub(crate) type EventColumns = (i64, i64, String, String);

/// A lease or revision as stored. Both are counted from 0 and move on by one per claim or
/// checkpoint, so they stay far below `i64::MAX`; a larger one can be no run's, and becomes -1,
/// which matches none.
pub(crate) fn count_param(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(-1)
}

/// A stored lease, checked.
pub(crate) fn lease(store: &str, run_id: &str, stored: i64) -> Result<u64, StoreError> {
    u64::try_from(stored).map_err(|_| unreadable(store, run_id, format!("its lease is {stored}")))
}

/// A blob's bytes as stored, checked against the digest they are stored under.
pub(crate) fn blob(store: &str, sha256: &str, bytes: Vec<u8>) -> Result<Blob, StoreError> {
    let digest: BlobDigest = sha256
        .parse()
        .map_err(|e| StoreError::backend(store, format!("a stored blob's name: {e}")))?;
    Blob::from_digest(digest, bytes.len() as u64)
        .load(bytes.into())
        .map_err(|e| StoreError::backend(store, e.to_string()))
}

/// A stored run, read back from its record (the snapshot column), its lease and revision and,
/// for a record whose history lies in the log, the log's messages as (position, JSON text), which
/// `messages` reads when asked; the bytes of their media come from `blobs`, given the digests
/// (as hex) they name, only when they name any.
pub(crate) async fn stored_run<F, B>(
    store: &str,
    run_id: &str,
    record: &str,
    (lease, revision, lease_expires_ms): (i64, i64, i64),
    messages: F,
    blobs: B,
) -> Result<StoredRun, StoreError>
where
    F: AsyncFnOnce() -> Result<Vec<(i64, String)>, StoreError>,
    B: AsyncFnOnce(Vec<String>) -> Result<Vec<Blob>, StoreError>,
{
    let (mut snapshot, layout) =
        record::parse_record(record).map_err(|why| unreadable(store, run_id, why))?;
    if let Some(layout) = &layout {
        let mut by_pos = HashMap::new();
        for (pos, body) in messages().await? {
            let message: Message = serde_json::from_str(&body).map_err(|e| {
                unreadable(
                    store,
                    run_id,
                    format!("its message at log position {pos} does not parse: {e}"),
                )
            })?;
            by_pos.insert(u64::try_from(pos).unwrap_or(u64::MAX), message);
        }
        let missing = missing_blobs(by_pos.values());
        if !missing.is_empty() {
            let found: HashMap<BlobDigest, Blob> =
                blobs(missing.iter().map(|d| d.to_string()).collect())
                    .await?
                    .into_iter()
                    .map(|b| (b.digest(), b))
                    .collect();
            for (pos, message) in &mut by_pos {
                attach_media(message, &found).map_err(|digest| {
                    unreadable(
                        store,
                        run_id,
                        format!("its message at log position {pos} names media sha256:{digest}, which the store's blobs lack"),
                    )
                })?;
            }
        }
        let by_pos: HashMap<u64, Arc<Message>> = by_pos
            .into_iter()
            .map(|(pos, m)| (pos, Arc::new(m)))
            .collect();
        snapshot.messages = history_from_log(layout, &by_pos).map_err(|pos| {
            unreadable(
                store,
                run_id,
                format!("its history names log position {pos}, which its message log lacks"),
            )
        })?;
    }
    let revision = u64::try_from(revision)
        .map_err(|_| unreadable(store, run_id, format!("its revision is {revision}")))?;
    Ok(StoredRun {
        snapshot,
        lease: self::lease(store, run_id, lease)?,
        revision,
        lease_expires_ms,
        layout,
    })
}

/// One line of a listing, read back.
pub(crate) fn summary(store: &str, columns: SummaryColumns) -> Result<RunSummary, StoreError> {
    let (
        run_id,
        agent,
        session_id,
        parent_run_id,
        status,
        step,
        created_ms,
        updated_ms,
        lease_expires_ms,
        input_tokens,
        output_tokens,
    ) = columns;
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
        lease_expires_ms,
        usage: agentry_core::Usage::new(
            u64::try_from(input_tokens.unwrap_or(0)).unwrap_or(0),
            u64::try_from(output_tokens.unwrap_or(0)).unwrap_or(0),
        ),
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
        "SELECT run_id, agent, session_id, parent_run_id, status, step, created_ms, updated_ms, \
         lease_expires_ms, (snapshot -> 'usage' ->> 'input_tokens')::BIGINT, \
         (snapshot -> 'usage' ->> 'output_tokens')::BIGINT FROM runs WHERE TRUE",
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
    if query.top_level {
        sql.push(" AND parent_run_id IS NULL");
    }
    if let Some(before) = &query.before {
        sql.push(" AND position < COALESCE((SELECT position FROM runs WHERE run_id = ")
            .push_bind(before.clone())
            .push("), 0)");
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
