//! A fork of a run on Temporal: a new run that starts where a stopped run stood at the end of
//! one of its steps, as [`Fork`] describes, read from the stopped run's workflow.

use crate::TemporalError;
use crate::client::{Client, Origin, RunHandle, RunRequest};
use crate::events::WireEvent;
use crate::wire::WorkflowInput;
use agentry_core::fork::{Fork, ForkError};
use agentry_core::{RunOptions, StoredEvent};

impl Client {
    /// A fork of run `from` from the end of one of its steps (0: its start), with its history
    /// and state as they were then, or with another input or state ([`Fork`]): a new run of
    /// the same agent, as a request (await it for the fork's result, or
    /// [`start`](RunRequest::start) it for a handle). The run must have stopped (ended,
    /// failed, or paused for a person); it is left as it is.
    ///
    /// The fork keeps the original's user, tags, metadata and stored hooks, and its metadata
    /// names where it came from (`forked_from`, `forked_at_step`); the request's options give
    /// its run id and nothing else. It starts without RunStart hooks (its history is the
    /// original's, whose hooks saw it) and records its own events from the step after, as an
    /// in-process fork does. The original is read from its workflow (queries, which take a
    /// worker); a run that continued as a new execution keeps only that execution's events, so
    /// it cannot be forked ([`ForkError::Recording`]).
    ///
    /// ```no_run
    /// # async fn f(client: agentry_temporal::Client) -> Result<(), agentry_temporal::TemporalError> {
    /// use agentry_core::fork::Fork;
    ///
    /// // What if the person had asked for something else after the first step?
    /// let fork = client.fork("run-1", Fork::at(1).input("Use 5 instead of 4.")).await?;
    /// println!("{}", fork.text);
    /// # Ok(()) }
    /// ```
    pub fn fork(&self, from: &str, fork: Fork) -> RunRequest<'_> {
        RunRequest::of(
            self,
            Origin::Fork {
                from: from.to_string(),
                fork,
            },
        )
    }

    /// Starts a fork of run `from` (see [`Client::fork`]).
    pub(crate) async fn start_fork(
        &self,
        from: &str,
        fork: &Fork,
        options: RunOptions,
    ) -> Result<RunHandle, TemporalError> {
        if options.session_id.is_some()
            || options.user_id.is_some()
            || !options.tags.is_empty()
            || !options.metadata.is_empty()
            || !options.hooks.is_empty()
            || !options.tool_sources.is_empty()
        {
            return Err(TemporalError::Options(format!(
                "a fork of run `{from}` keeps its user, tags, metadata and hooks, and leaves its session: give the fork's options a run id only"
            )));
        }
        let source = self.handle(from);
        let not_forkable = |why: String| {
            TemporalError::Fork(ForkError::NoSuchRun {
                run_id: from.to_string(),
                why,
            })
        };
        let stopped = source
            .stopped()
            .await
            .map_err(|e| match e {
                TemporalError::Interaction { message, .. } => not_forkable(message),
                other => other,
            })?
            .ok_or_else(|| {
                not_forkable(
                    "it has not stopped: a run is forked once it has ended, failed or paused for a person".into(),
                )
            })?;
        let page = source.own_events().await?;
        if page.from > 0 {
            return Err(TemporalError::Fork(ForkError::Recording {
                run_id: from.to_string(),
                why: format!(
                    "it continued as a new execution after {} events (`Client::continue_as_new_after`), which keeps only its own, so its history cannot be told apart by step",
                    page.from
                ),
            }));
        }
        let events: Vec<StoredEvent> = page
            .events
            .iter()
            .filter_map(|entry| match entry {
                WireEvent::Run(event) => event.to_recorded(),
                _ => None,
            })
            .enumerate()
            .map(|(i, event)| StoredEvent {
                seq: i as u64 + 1,
                event,
            })
            .collect();
        let run_id = options
            .run_id
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let snapshot = fork
            .snapshot(&stopped, &events, run_id.clone())
            .map_err(TemporalError::Fork)?;
        let (limits, placement, continue_after) = self.plan_settings();
        let request = WorkflowInput {
            agent: snapshot.agent.clone(),
            input: agentry_core::Content::new(),
            session_id: None,
            user_id: snapshot.user_id.clone(),
            tags: snapshot.tags.clone(),
            metadata: snapshot.metadata.clone(),
            limits,
            placement,
            continue_after,
            carried: None,
            parent: None,
            hooks: snapshot.hooks.clone(),
            forked: Some(Box::new(snapshot)),
        };
        self.launch(run_id, request).await
    }
}
