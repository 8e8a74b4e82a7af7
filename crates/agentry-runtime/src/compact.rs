//! The compaction phase of a step: before the model call, when the prompt has grown past the
//! agent's threshold, older messages are folded into one (BeforeCompact, the summarising call or
//! the window's note, CompactFailed, AfterCompact).

use super::driver::Driver;
use super::effects::Folded;
use super::limits::Limits;
use super::scope::Scope;
use agentry_core::agent::{
    CompactPlan, CompactStrategy, Compaction, OnCompactError, SUMMARY_HEADING, transcript,
};
use agentry_core::hooks::{AfterCompact, BeforeCompact, CompactFailed, Events};
use agentry_core::{
    AgentDef, Error, EstimateCounter, Message, Model, ModelError, ModelErrorKind, ModelRequest,
    ModelResponse, RunEvent, RunMachine, TokenCounter, message_tokens, prompt_tokens,
};
use std::sync::Arc;

/// The running size of a run's prompt, so that each step counts only the messages added since
/// the last one.
pub(crate) struct PromptSize {
    counter: Arc<dyn TokenCounter>,
    /// Tokens of the system prompt and tool declarations.
    fixed: usize,
    /// Messages counted so far, and their tokens.
    counted: usize,
    tokens: usize,
}

impl Driver {
    /// Compacts the history when the agent has a compaction and the prompt passed its threshold;
    /// returns what it folded, if it did.
    pub(crate) async fn compact_phase(&mut self) -> Result<Option<Folded>, Error> {
        let manual = std::mem::take(&mut self.compact_now);
        CompactPhase {
            manual,
            def: &self.def,
            scope: &self.scope,
            model: &self.model,
            limits: &self.rt.limits,
            machine: &mut self.machine,
            prompt_size: &mut self.prompt_size,
        }
        .run()
        .await
    }
}

/// The compaction phase of one step, borrowing from its run what it needs: the agent, the
/// hooks, the model and its limits, and (to write) the run's machine and the prompt's running
/// size.
struct CompactPhase<'d> {
    /// Asked for (`/compact`): the threshold does not apply.
    manual: bool,
    def: &'d Arc<AgentDef>,
    scope: &'d Scope,
    model: &'d Arc<dyn Model>,
    limits: &'d Limits,
    machine: &'d mut RunMachine,
    prompt_size: &'d mut Option<PromptSize>,
}

impl CompactPhase<'_> {
    /// Folds older messages into one when the prompt passed the agent's threshold.
    async fn run(mut self) -> Result<Option<Folded>, Error> {
        let def = self.def;
        let Some(compaction) = def.compaction.as_ref() else {
            return Ok(None);
        };
        let tokens = self.prompt_tokens(compaction);
        if tokens <= compaction.threshold() && !self.manual {
            return Ok(None);
        }
        let messages = self.machine.messages.clone();
        let Some(mut plan) = compaction.plan(&messages) else {
            tracing::debug!(agent = %def.name, tokens, "prompt past the compaction threshold, but too few messages to fold");
            return Ok(None);
        };
        if self.scope.wants(Events::BEFORE_COMPACT) {
            let mut ev = BeforeCompact::new(tokens, compaction.threshold(), messages.clone(), plan);
            ev.manual = self.manual;
            let (ev, by) = self.scope.hook_decided(ev).await?;
            if let Some(reason) = ev.vetoed() {
                let reason = self.scope.context().redact(reason);
                tracing::info!(agent = %def.name, hook = by.as_deref().unwrap_or_default(), %reason, "compaction vetoed");
                return Ok(None);
            }
            match ev.plan.aligned(&messages) {
                Some(p) => plan = p,
                None => return Ok(None),
            }
        }
        let Some(summary) = self.summary(compaction, &messages, plan).await? else {
            return Ok(None);
        };
        let summary = if self.scope.wants(Events::AFTER_COMPACT) {
            let mut ev = AfterCompact::new(plan, tokens, summary);
            ev.manual = self.manual;
            self.scope.hook(ev).await?.summary
        } else {
            summary
        };
        self.machine
            .messages
            .replace_range(plan.start, plan.end, Message::user(summary.clone()));
        if let Some(size) = self.prompt_size.as_mut() {
            size.counted = 0;
            size.tokens = 0;
        }
        self.scope.engine.send_event(|p| RunEvent::Compacted {
            removed: plan.len(),
            strategy: plan.strategy,
            summary: summary.clone(),
            agent_path: p.clone(),
            run_id: None,
        });
        Ok(Some(Folded {
            start: plan.start,
            end: plan.end,
            summary,
        }))
    }

    /// The text that replaces the folded messages, or `None` when the run goes on uncompacted.
    async fn summary(
        &mut self,
        compaction: &Compaction,
        messages: &agentry_core::History,
        plan: CompactPlan,
    ) -> Result<Option<String>, Error> {
        if plan.strategy == CompactStrategy::Window {
            return Ok(Some(format!(
                "[{} earlier messages were removed to fit the context window.]",
                plan.len()
            )));
        }
        let model = compaction
            .summarizer_model()
            .cloned()
            .unwrap_or_else(|| self.model.clone());
        let folded = transcript((plan.start..plan.end).filter_map(|i| messages.get(i)));
        let mut request = ModelRequest::new(
            std::iter::once(Message::user(format!(
                "{folded}\nSummarise the conversation above."
            )))
            .collect(),
        );
        request.system = Some(compaction.summary_instructions().clone());
        let limit = self.limits.model_turn_timeout;
        let call =
            agentry_core::deadline::within(limit, ModelResponse::complete(&*model, &request));
        let outcome = call
            .await
            .unwrap_or_else(|_| Err(super::model_call::turn_timed_out(model.name(), limit)));
        let error = match outcome {
            Ok(response) if !response.text.trim().is_empty() => {
                self.machine.usage += response.usage;
                return Ok(Some(format!(
                    "{SUMMARY_HEADING}\n\n{}",
                    response.text.trim()
                )));
            }
            Ok(response) => {
                self.machine.usage += response.usage;
                ModelError::new(
                    model.name(),
                    ModelErrorKind::Other,
                    "the summarising call returned no text",
                )
            }
            Err(e) => e,
        };
        let mut policy = compaction.error_policy();
        if self.scope.wants(Events::COMPACT_FAILED) {
            let ev = self
                .scope
                .hook(CompactFailed::new(error.clone(), plan, policy))
                .await?;
            if let Some(summary) = ev.recovery() {
                return Ok(Some(summary.to_string()));
            }
            policy = ev.policy;
        }
        match policy {
            OnCompactError::Continue => {
                let error = error.to_string();
                let error = self.scope.context().redact(&error);
                tracing::warn!(agent = %self.def.name, %error, "compaction failed; the run goes on uncompacted");
                Ok(None)
            }
            OnCompactError::Fail => Err(Error::Compaction {
                agent: self.def.name.to_string(),
                error,
            }),
        }
    }

    /// The prompt's size in tokens, counting only messages added since the last call.
    fn prompt_tokens(&mut self, compaction: &Compaction) -> usize {
        let size = self.prompt_size.get_or_insert_with(|| {
            let counter = compaction
                .token_counter()
                .cloned()
                .or_else(|| self.model.token_counter())
                .unwrap_or_else(|| Arc::new(EstimateCounter));
            let fixed = prompt_tokens(
                &*counter,
                self.def.instructions.as_deref(),
                [],
                &self.def.specs,
            );
            PromptSize {
                counter,
                fixed,
                counted: 0,
                tokens: 0,
            }
        });
        let messages = &self.machine.messages;
        if messages.len() < size.counted {
            size.counted = 0;
            size.tokens = 0;
        }
        for m in messages.iter().skip(size.counted) {
            size.tokens += message_tokens(&*size.counter, m);
        }
        size.counted = messages.len();
        size.fixed + size.tokens
    }
}
