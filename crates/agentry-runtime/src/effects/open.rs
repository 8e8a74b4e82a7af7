//! Opening a run's effects on a runtime: its hooks, default model and limits, never its store.

use super::{Lineage, RunEffects, StoredScope};
use crate::Runtime;
use agentry_core::{AgentDef, Error, Message, RunEvent, RunMachine, RunOptions, RunSnapshot};
use futures::channel::mpsc::UnboundedSender;
use std::sync::Arc;

impl Runtime {
    /// The effects of the run `snapshot` describes, run as this runtime runs them: with its
    /// hooks (runtime, live and `agent`'s), default model and limits, but never its store.
    ///
    /// The run's hooks and tool sources that are data (`snapshot.hooks`, from
    /// `RunOptions::with_stored`) are built again with this runtime's restorers, as a resume
    /// builds them ([`restore_scope`](Self::restore_scope)).
    pub fn effects(
        &self,
        agent: &Arc<AgentDef>,
        snapshot: &RunSnapshot,
    ) -> Result<RunEffects, Error> {
        self.effects_with(agent, snapshot, None, None, None)
    }

    /// [`effects`](Self::effects) whose run events go to `events`: what the effects do
    /// (messages they add, tool calls, hook decisions, state patches, custom events, streamed
    /// text). The events of the run's course — started, step started and finished, awaiting
    /// approval, finished or failed — and the messages the caller adds itself (and reports
    /// with [`RunEffects::report_added`]) are the caller's to send.
    pub fn effects_streaming(
        &self,
        agent: &Arc<AgentDef>,
        snapshot: &RunSnapshot,
        events: UnboundedSender<RunEvent>,
    ) -> Result<RunEffects, Error> {
        self.effects_with(agent, snapshot, Some(events), None, None)
    }

    /// [`effects_streaming`](Self::effects_streaming) of a sub-agent's run: `snapshot` (whose
    /// `parent_run_id` names the parent run) of `agent`, called by the runs of `lineage`. Its
    /// hooks are the runtime's, every ancestor's and its own, its agent path is the ancestors'
    /// names and its own, and it counts toward the nesting limit (`Runtime::max_depth`): opening
    /// one past the limit is [`Error::DepthLimit`].
    pub fn sub_agent_effects(
        &self,
        lineage: Lineage<'_>,
        agent: &Arc<AgentDef>,
        snapshot: &RunSnapshot,
        events: UnboundedSender<RunEvent>,
    ) -> Result<RunEffects, Error> {
        self.check_depth(&lineage)?;
        self.effects_with(agent, snapshot, Some(events), Some(lineage), None)
    }

    /// [`effects_streaming`](Self::effects_streaming), or [`sub_agent_effects`](Self::sub_agent_effects)
    /// with `lineage`, whose run-scope hooks and tool sources that are data are `scope` (built
    /// once with [`restore_scope`](Self::restore_scope) from `snapshot.hooks`) rather than built
    /// again from the snapshot.
    pub fn effects_scoped(
        &self,
        agent: &Arc<AgentDef>,
        snapshot: &RunSnapshot,
        events: UnboundedSender<RunEvent>,
        lineage: Option<Lineage<'_>>,
        scope: &StoredScope,
    ) -> Result<RunEffects, Error> {
        if let Some(lineage) = lineage {
            self.check_depth(&lineage)?;
        }
        self.effects_with(agent, snapshot, Some(events), lineage, Some(scope))
    }

    pub(super) fn check_depth(&self, lineage: &Lineage<'_>) -> Result<(), Error> {
        let depth = lineage.ancestors.len() as u32;
        let limit = self.inner.limits.max_depth;
        if depth > limit {
            let path: Vec<&str> = lineage.ancestors.iter().map(|def| &*def.name).collect();
            return Err(Error::DepthLimit {
                path: path.join("/"),
                depth,
                limit,
            });
        }
        Ok(())
    }

    pub(super) fn effects_with(
        &self,
        agent: &Arc<AgentDef>,
        snapshot: &RunSnapshot,
        events: Option<UnboundedSender<RunEvent>>,
        lineage: Option<Lineage<'_>>,
        scope: Option<&StoredScope>,
    ) -> Result<RunEffects, Error> {
        let restored;
        let scope = match scope {
            Some(scope) => scope,
            None if snapshot.hooks.is_empty() => {
                restored = StoredScope::default();
                &restored
            }
            None => {
                restored = self.restore_scope(&snapshot.hooks).map_err(|e| {
                    Error::other(format!("run `{}` cannot be opened: {e}", snapshot.run_id))
                })?;
                &restored
            }
        };
        let options = RunOptions {
            hooks: scope.hooks.clone(),
            stored_hooks: scope.records.clone(),
            tool_sources: scope.tool_sources.clone(),
            run_id: Some(snapshot.run_id.clone()),
            session_id: snapshot.session_id.clone(),
            user_id: snapshot.user_id.clone(),
            tags: snapshot.tags.clone(),
            metadata: snapshot.metadata.clone(),
            compact_first: false,
        };
        // The caller's engine records the run: this runtime's store is left out.
        let storeless;
        let runtime = if self.inner.store.is_some() {
            let mut inner = (*self.inner).clone();
            inner.store = None;
            storeless = Runtime {
                inner: Arc::new(inner),
            };
            &storeless
        } else {
            self
        };
        let nested = lineage.map(|lineage| (lineage, snapshot.parent_run_id.clone()));
        let mut driver = runtime.driver_under(agent, options, events, None, nested)?;
        let state = agent.initial_state.parse_json(snapshot.state.clone())?;
        driver.scope.engine.take_state(state);
        driver.machine = RunMachine::restore(snapshot);
        // The pending turn is the assistant message in the history, not a copy of its calls:
        // hooks that read the turn see its text too.
        if let Some(copy) = driver.machine.pending.clone() {
            let turn = driver
                .machine
                .messages
                .iter_shared()
                .rev()
                .find(|m| {
                    matches!(m.as_ref(), Message::Assistant { .. })
                        && m.tool_calls() == copy.tool_calls()
                })
                .cloned();
            if let Some(turn) = turn {
                driver.machine.pending = Some(turn);
            }
        }
        driver.scope.engine.set_step(snapshot.step);
        Ok(RunEffects { driver })
    }
}
