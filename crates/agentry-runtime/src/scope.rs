//! The hooks and context of one run, with the helpers every phase uses: dispatch an event and
//! report the notices (state changes, custom events) its hooks left.

use agentry_core::hooks::{
    Custom, Event, Events, HookFailed, HookName, HookStep, Hooks, MessageAdded, StateChange,
};
use agentry_core::{Error, Message, Notice, RunContext, RunEngine, RunEvent};
use futures::future::{Either, ready};
use std::future::Future;
use std::sync::Arc;

/// The hooks a run dispatches to and the run itself. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Scope {
    pub hooks: Arc<Hooks>,
    pub engine: RunEngine,
}

impl Scope {
    /// The run as its hooks and tools see it.
    #[inline]
    pub(crate) fn context(&self) -> &RunContext {
        self.engine.context()
    }

    /// True when some hook wants any of `events`.
    #[inline]
    pub(crate) fn wants(&self, events: Events) -> bool {
        self.hooks.wants(events)
    }

    /// True when an added message is reported anywhere: to an event stream or to MessageAdded
    /// hooks. (A run reported nowhere skips the report without building its future.)
    pub(crate) fn reports_messages(&self) -> bool {
        self.engine.has_event_stream() || self.wants(Events::MESSAGE_ADDED)
    }

    /// Dispatches `ev` and reports the notices its hooks left.
    pub(crate) async fn hook<E: Event>(&self, ev: E) -> Result<E, Error> {
        Ok(self.hook_decided(ev).await?.0)
    }

    /// Dispatches `ev`, returning the name of the hook that decided, if one did.
    pub(crate) async fn hook_decided<E: Event>(
        &self,
        ev: E,
    ) -> Result<(E, Option<HookName>), Error> {
        let mut slot = Some(ev);
        let by = self.run_hooks(&mut slot).await?;
        Ok((slot.expect("the event is back in its slot"), by))
    }

    /// Dispatches `ev` traced ([`Hooks::dispatch_traced`]) and reports the notices its hooks
    /// left: for observers that say which hook changed what (it costs a copy of the event per
    /// hook, so runs use it only when someone watches).
    pub(crate) async fn hook_traced<E: Event>(
        &self,
        ev: E,
    ) -> Result<(E, Option<HookName>, Vec<HookStep<E>>), Error> {
        let traced = self.hooks.dispatch_traced(ev, self.context()).await;
        let (ev, by) = traced.outcome?;
        if self.engine.has_notices() {
            self.flush().await?;
        }
        Ok((ev, by, traced.steps))
    }

    /// Runs the hooks of the event in `slot` and reports the notices they left; returns the name
    /// of the hook that decided, if one did. When every hook of the event is synchronous (and
    /// left no notice), this completes at once; either way the event stays in its slot.
    pub(crate) fn run_hooks<'a, E: Event>(
        &'a self,
        slot: &'a mut Option<E>,
    ) -> impl Future<Output = Result<Option<HookName>, Error>> + 'a {
        let ev = slot.as_mut().expect("run_hooks needs an event in its slot");
        match self.hooks.dispatch_sync(ev, self.context()) {
            Some(Err(e)) => Either::Left(ready(Err(e.into()))),
            Some(Ok(by)) if !self.engine.has_notices() => Either::Left(ready(Ok(by))),
            sync => Either::Right(async move {
                let by = match sync {
                    Some(outcome) => outcome?,
                    None => self.hooks.dispatch_chain_in(slot, self.context()).await?,
                };
                if self.engine.has_notices() {
                    self.flush().await?;
                }
                Ok(by)
            }),
        }
    }

    /// Reports state changes and custom events recorded since the last flush: as stream events
    /// and to StateChange and Custom hooks. Costs one atomic operation when there are none.
    pub(crate) async fn flush(&self) -> Result<(), Error> {
        for notice in self.engine.take_notices() {
            match notice {
                Notice::State {
                    previous,
                    current,
                    source,
                } => {
                    if self.engine.has_event_stream() {
                        let patch = json_patch::diff(&previous, &current);
                        let source = source.clone();
                        self.engine.send_event(|p| RunEvent::StatePatch {
                            patch,
                            source,
                            agent_path: p.clone(),
                            run_id: None,
                        });
                    }
                    if self.wants(Events::STATE_CHANGE) {
                        let ev = StateChange::new(previous, current, source);
                        self.hooks.dispatch(ev, self.context()).await?;
                    }
                }
                Notice::Custom { name, data } => {
                    if self.engine.has_event_stream() {
                        let (n, d) = (name.clone(), data.clone());
                        self.engine.send_event(|p| RunEvent::Custom {
                            name: n,
                            data: d,
                            agent_path: p.clone(),
                            run_id: None,
                        });
                    }
                    if self.wants(Events::CUSTOM) {
                        self.hooks
                            .dispatch(Custom::new(name, data), self.context())
                            .await?;
                    }
                }
                Notice::HookFailed {
                    hook,
                    event,
                    duration,
                    error,
                } => {
                    let error = self.context().redact(&error).into_owned();
                    tracing::warn!(%hook, %event, %error, "a hook's handler failed; the run goes on");
                    if self.wants(Events::HOOK_FAILED) {
                        let ev = HookFailed::new(hook, event, duration, error, true);
                        self.hooks.dispatch(ev, self.context()).await?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Reports the state a new run starts with, before its RunStart hooks, as a patch from
    /// nothing: so a reader of the run's events can rebuild its state at any step (a fork from
    /// a step starts there). Nothing when the state is null or no one listens.
    pub(crate) fn report_start_state(&self) {
        if !self.engine.has_event_stream() {
            return;
        }
        let Ok(state) = self.context().state_json() else {
            return;
        };
        if state.is_null() {
            return;
        }
        self.engine
            .send_event(|p| RunEvent::start_state(state, p.clone()));
    }

    /// Reports a message added to the history.
    pub(crate) async fn added(&self, message: Arc<Message>) -> Result<(), Error> {
        if self.engine.has_event_stream() {
            let m = message.clone();
            self.engine.send_event(|p| RunEvent::Message {
                message: m,
                agent_path: p.clone(),
                run_id: None,
            });
        }
        if self.wants(Events::MESSAGE_ADDED) {
            self.hook(MessageAdded::new(message)).await?;
        }
        Ok(())
    }
}
