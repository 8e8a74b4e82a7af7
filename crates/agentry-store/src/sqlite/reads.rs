//! What the store reads back: a run, the run listing, a run's event history.

use super::SqliteStore;
use crate::error;
use crate::rows;
use agentry_core::{RunQuery, RunStatus, RunSummary, StoreError, StoredEvent, StoredRun};
use rusqlite::{OptionalExtension, params};

impl SqliteStore {
    pub(super) async fn load_run(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        let (name, id) = (self.name.clone(), run_id.to_string());
        let found = self
            .worker
            .call(move |conn| {
                let failed = |e| error::sqlite(&name, format_args!("loading run `{id}`"), e);
                let row: Option<(String, i64, i64, i64)> = conn
                    .prepare_cached(
                        "SELECT snapshot, lease, revision, lease_expires_ms FROM runs \
                         WHERE run_id = ?1",
                    )
                    .and_then(|mut q| {
                        q.query_row([&id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                            .optional()
                    })
                    .map_err(failed)?;
                let Some(row) = row else {
                    return Ok(None);
                };
                // Read with the record, in one go: the log holds every message it names.
                let messages: Vec<(i64, String)> = conn
                    .prepare_cached(
                        "SELECT pos, body FROM run_messages \
                         WHERE run_no = (SELECT position FROM runs WHERE run_id = ?1)",
                    )
                    .and_then(|mut q| {
                        q.query_map([&id], |r| Ok((r.get(0)?, r.get(1)?)))?
                            .collect::<Result<_, _>>()
                    })
                    .map_err(failed)?;
                Ok(Some((row, messages)))
            })
            .await?;
        let Some(((record, lease, revision, expires), messages)) = found else {
            return Ok(None);
        };
        let stored = (lease, revision, expires);
        let blobs = async |digests: Vec<String>| self.read_blobs(digests).await;
        rows::stored_run(
            &self.name,
            run_id,
            &record,
            stored,
            async || Ok(messages),
            blobs,
        )
        .await
        .map(Some)
    }

    /// The blobs stored under `digests` (hex SHA-256s); a digest the table lacks is left out.
    pub(super) async fn read_blobs(
        &self,
        digests: Vec<String>,
    ) -> Result<Vec<agentry_core::content::Blob>, StoreError> {
        let name = self.name.clone();
        let found: Vec<(String, Vec<u8>)> = self
            .worker
            .call(move |conn| {
                let failed = |e| error::sqlite(&name, format_args!("reading media bytes"), e);
                let mut q = conn
                    .prepare_cached("SELECT sha256, bytes FROM blobs WHERE sha256 = ?1")
                    .map_err(failed)?;
                let mut found = Vec::with_capacity(digests.len());
                for digest in &digests {
                    if let Some(row) = q
                        .query_row([digest], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                        .map_err(failed)?
                    {
                        found.push(row);
                    }
                }
                Ok(found)
            })
            .await?;
        found
            .into_iter()
            .map(|(sha256, bytes)| rows::blob(&self.name, &sha256, bytes))
            .collect()
    }
    pub(super) async fn list_runs(&self, query: &RunQuery) -> Result<Vec<RunSummary>, StoreError> {
        let name = self.name.clone();
        let query = query.clone();
        let found: Vec<rows::SummaryColumns> = self
            .worker
            .call(move |conn| {
                // Only the filters the query has: `(?1 IS NULL OR session_id = ?1)` would keep
                // SQLite from using the session and status indexes (a scan per listing).
                let mut sql = String::from(
                    "SELECT run_id, agent, session_id, parent_run_id, status, step, created_ms, \
                     updated_ms, lease_expires_ms, \
                     json_extract(snapshot, '$.usage.input_tokens'), \
                     json_extract(snapshot, '$.usage.output_tokens') FROM runs WHERE TRUE",
                );
                let status = query.status.map(RunStatus::as_str);
                let mut values: Vec<&dyn rusqlite::ToSql> = Vec::new();
                if let Some(session) = &query.session_id {
                    sql.push_str(" AND session_id = ?");
                    values.push(session);
                }
                if let Some(agent) = &query.agent {
                    sql.push_str(" AND agent = ?");
                    values.push(agent);
                }
                if let Some(status) = &status {
                    sql.push_str(" AND status = ?");
                    values.push(status);
                }
                if query.top_level {
                    sql.push_str(" AND parent_run_id IS NULL");
                }
                if let Some(before) = &query.before {
                    sql.push_str(
                        " AND position < COALESCE((SELECT position FROM runs WHERE run_id = ?), 0)",
                    );
                    values.push(before);
                }
                let limit = query.limit.map_or(-1, i64::from);
                sql.push_str(" ORDER BY position DESC LIMIT ?");
                values.push(&limit);
                conn.prepare_cached(&sql)
                    .and_then(|mut q| {
                        q.query_map(values.as_slice(), |r| {
                            Ok((
                                r.get(0)?,
                                r.get(1)?,
                                r.get(2)?,
                                r.get(3)?,
                                r.get(4)?,
                                r.get(5)?,
                                r.get(6)?,
                                r.get(7)?,
                                r.get(8)?,
                                r.get(9)?,
                                r.get(10)?,
                            ))
                        })?
                        .collect::<Result<_, _>>()
                    })
                    .map_err(|e| error::sqlite(&name, "listing runs", e))
            })
            .await?;
        found
            .into_iter()
            .map(|columns| rows::summary(&self.name, columns))
            .collect()
    }
    pub(super) async fn run_events(
        &self,
        run_id: &str,
        after: u64,
        limit: Option<usize>,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let (name, id) = (self.name.clone(), run_id.to_string());
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        // SQLite reads a negative limit as none.
        let limit = limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let found: Vec<rows::EventColumns> = self
            .worker
            .call(move |conn| {
                conn.prepare_cached(
                    "SELECT seq, at_ms, kind, data FROM run_events \
                     WHERE run_no = (SELECT position FROM runs WHERE run_id = ?1) AND seq > ?2 \
                     ORDER BY seq LIMIT ?3",
                )
                .and_then(|mut q| {
                    q.query_map(params![&id, after, limit], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                    })?
                    .collect::<Result<_, _>>()
                })
                .map_err(|e| {
                    error::sqlite(&name, format_args!("reading the events of run `{id}`"), e)
                })
            })
            .await?;
        found
            .into_iter()
            .map(|columns| rows::event(&self.name, run_id, columns))
            .collect()
    }

    /// The number of a run's last event (0: none), from the index.
    pub(super) async fn last_seq(&self, run_id: &str) -> Result<u64, StoreError> {
        let (name, id) = (self.name.clone(), run_id.to_string());
        let last: i64 = self
            .worker
            .call(move |conn| {
                conn.prepare_cached(
                    "SELECT COALESCE(MAX(seq), 0) FROM run_events \
                     WHERE run_no = (SELECT position FROM runs WHERE run_id = ?1)",
                )
                .and_then(|mut q| q.query_row(params![&id], |r| r.get(0)))
                .map_err(|e| {
                    error::sqlite(&name, format_args!("reading the events of run `{id}`"), e)
                })
            })
            .await?;
        Ok(u64::try_from(last).unwrap_or(0))
    }
}
