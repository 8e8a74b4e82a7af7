//! Building a run's driver: its hooks (the runtime's, live, the agent's, the run's), its context,
//! its tool sources, and where it sits among the runs that enclose it.

use super::driver::{Driver, scoped_hooks};
use super::{Restored, Runtime, effects, nesting, new_run_id};
use agentry_core::hooks::{HookSpecRecord, Hooks};
use agentry_core::{AgentDef, Error, RunContextSpec, RunEvent, RunInfo, RunOptions};
use futures::channel::mpsc::UnboundedSender;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

impl Runtime {
    /// Builds a run's hooks and tool sources that are data again from their records, with this
    /// runtime's restorers ([`restores`](Self::restores), [`restores_tools`](Self::restores_tools)):
    /// what a resumed run, or a run driven elsewhere ([`effects`](Self::effects)), uses.
    ///
    /// # Errors
    /// A record of a kind this runtime was not told how to build, or whose spec does not build:
    /// the error says which, and what to do.
    pub fn restore_scope(&self, records: &[HookSpecRecord]) -> Result<effects::StoredScope, Error> {
        let mut scope = effects::StoredScope {
            records: records.to_vec(),
            ..Default::default()
        };
        for stored in records {
            let Some(build) = self.inner.restorers.get(stored.kind.as_str()) else {
                return Err(Error::other(format!(
                    "it has a stored hook of kind `{}`, which this runtime cannot build again; tell it how with `Runtime::restores::<..>()` (for command hooks, `Runtime::restores::<agentry_external::CommandHooks>()`; for MCP servers, `Runtime::restores_tools::<agentry_mcp::McpServers>()`)",
                    stored.kind
                )));
            };
            let restored = build(&stored.spec).map_err(|e| {
                Error::other(format!(
                    "its stored hook of kind `{}` cannot be built again: {e}",
                    stored.kind
                ))
            })?;
            match restored {
                Restored::Hook(hook) => {
                    scope.hooks.add(hook);
                }
                Restored::Tools(source) => scope.tool_sources.push(source),
            }
        }
        Ok(scope)
    }

    pub(super) fn driver(
        &self,
        def: &Arc<AgentDef>,
        options: RunOptions,
        events: Option<UnboundedSender<RunEvent>>,
        cancel: Option<CancellationToken>,
    ) -> Result<Box<Driver>, Error> {
        self.driver_under(def, options, events, cancel, None)
    }

    /// [`driver`](Self::driver), for a sub-agent's run when `nested` says where it sits (and its
    /// parent run's id): the ancestors' hooks wrap its own, and its agent path, root run and depth
    /// are theirs.
    pub(crate) fn driver_under(
        &self,
        def: &Arc<AgentDef>,
        options: RunOptions,
        events: Option<UnboundedSender<RunEvent>>,
        cancel: Option<CancellationToken>,
        nested: Option<(effects::Lineage<'_>, Option<String>)>,
    ) -> Result<Box<Driver>, Error> {
        // The order of an in-process run's, and of its sub-agents': the runtime's hooks, then
        // the live ones, the root agent's, the run's, and each sub-agent's down to this one.
        let live = self.inner.live.snapshot();
        let empty = Hooks::new();
        let live = live.as_deref().unwrap_or(&empty);
        let hooks = match &nested {
            Some((lineage, _)) if !lineage.ancestors.is_empty() => {
                let (root, below) = lineage.ancestors.split_first().expect("not empty");
                let mut scopes = vec![live, &root.hooks, &options.hooks];
                scopes.extend(below.iter().map(|a| &a.hooks));
                scopes.push(&def.hooks);
                scoped_hooks(&self.inner.hooks, &scopes)
            }
            // A run of its own (the common case): no list to allocate.
            _ => scoped_hooks(&self.inner.hooks, &[live, &def.hooks, &options.hooks]),
        };
        let depth = match (&nested, nesting::enclosing()) {
            (Some((lineage, _)), _) => lineage.ancestors.len() as u32,
            (None, Some(parent)) => nesting::nested_depth(&parent, self.inner.limits.max_depth)?,
            (None, None) => 0,
        };
        let run_id = options.run_id.unwrap_or_else(new_run_id);
        let (parent_run_id, agent_path, root_run_id) = match &nested {
            Some((lineage, parent)) => {
                let path: Vec<&str> = lineage
                    .ancestors
                    .iter()
                    .chain(std::iter::once(def))
                    .map(|a| &*a.name)
                    .collect();
                let path: Arc<str> = path.join("/").into();
                (parent.clone(), path, lineage.root_run_id.to_string())
            }
            None => (None, def.name.clone(), run_id.clone()),
        };
        let spec = RunContextSpec {
            run_id: run_id.clone(),
            parent_run_id,
            agent_name: def.name.clone(),
            agent_path,
            info: Arc::new(RunInfo {
                session_id: options.session_id,
                user_id: options.user_id,
                tags: options.tags,
                metadata: options.metadata,
                root_run_id: Some(root_run_id),
            }),
            cancel: cancel.unwrap_or_default(),
            state: def.initial_state.clone_box(),
            observe_state: false,
            events,
            step: 0,
            redactor: self.inner.redactor.clone(),
            record_events: self.inner.store.is_some(),
            enclosing_history: None,
            hook_timeout: self.inner.limits.hook_timeout,
            depth,
        };
        let mut driver = Driver::new(def, &self.inner, hooks, spec)?;
        driver.stored_hooks = options.stored_hooks;
        driver.tool_sources = options.tool_sources;
        driver.compact_now = options.compact_first;
        Ok(driver)
    }
}
