//! [`Guards`]: limits on steps, tokens, wall time and cost, and finish reasons that stop a run.

use super::per_run::PerRun;
use agentry_core::hooks::{
    AfterModel, AfterStep, BeforeStep, BeforeTool, Events, Hook, HookCtx, HookExt,
    HookRegistration, HookResult, IntoHook, RunEnd, RunFailed, RunStart,
};
use agentry_core::{FinishReason, Limit, StopReason, Usage};
use std::collections::HashMap;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The priority guards run at: before other hooks on `Before*` events, after them on `After*`
/// events (which run in reverse order).
pub const GUARD_PRIORITY: i32 = 200;

/// Prices of one model, per million tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    /// Per million prompt tokens not served from a cache.
    pub input: f64,
    /// Per million prompt tokens served from the provider's cache.
    pub cached_input: f64,
    /// Per million output tokens.
    pub output: f64,
}

impl Price {
    /// The cost of one model call's `usage`.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        (fresh as f64 * self.input
            + cached as f64 * self.cached_input
            + usage.output_tokens as f64 * self.output)
            / 1e6
    }
}

/// Prices by model name (`Model::name`, e.g. `openai:gpt-4.1`), in one currency.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PriceTable {
    prices: HashMap<String, Price>,
}

impl PriceTable {
    /// An empty table.
    pub fn new() -> Self {
        PriceTable::default()
    }

    /// Prices `model`.
    pub fn model(mut self, model: impl Into<String>, price: Price) -> Self {
        self.prices.insert(model.into(), price);
        self
    }

    /// The price of `model`, if the table has it.
    pub fn price(&self, model: &str) -> Option<&Price> {
        self.prices.get(model)
    }
}

/// Guards that stop a run at its limits, each with a typed reason ([`StopReason::Limit`]) that
/// says how far the run got, e.g. "step limit reached: 20/20".
///
/// - **Steps**, **tokens** (input + output of every model call; the sub-agents' too with
///   [`count_sub_agents`](Self::count_sub_agents)), **wall time** since the run started and
///   **cost** (by a [`PriceTable`]) are checked before each step: a run at a limit does not
///   start another step. The wall time also interrupts a run in the middle of a model turn, a
///   tool call or a sub-agent when it passes (through
///   [`RunContext::stop_at`](agentry_core::RunContext::stop_at)): calls of the turn under way
///   get an error result, and the run stops with the same limit.
/// - **Finish reasons**: when a model turn ends with one of the given reasons, the run stops
///   after that step (unless the turn was a final answer, which ends it anyway).
/// - **Repeated calls**: a tool call identical to ones the run already made (the same tool, the
///   same input) more than [`max_repeated_calls`](Self::max_repeated_calls) times is blocked,
///   and the model is told it is going round in circles (the run goes on).
///
/// [`Guards::new`] has the usual bundle: 20 steps, 32,768 tokens, 300 s, 5 identical calls; each limit can be
/// tuned or turned off. The guards are one hook, `guards`, at priority [`GUARD_PRIORITY`]; to give
/// limits different priorities, register several `Guards` (e.g. `Guards::none().max_cost(..)`),
/// each with its own `.named(..)` and `.priority(..)`. When several stops fire at once, the
/// highest-priority hook's is the run's stop reason; within one `Guards`, steps come first,
/// then tokens, cost and time.
///
/// Limits apply to each run the hook is attached to (a runtime's guards cover every run and
/// sub-agent run, each against its own counts, except tokens and cost counted with
/// `count_sub_agents`, which add the sub-agents' use to their parent's).
#[derive(Clone, Debug)]
pub struct Guards {
    max_steps: Option<u32>,
    max_tokens: Option<u64>,
    max_wall_time: Option<Duration>,
    max_cost: Option<(f64, Arc<PriceTable>)>,
    finish_reasons: Vec<FinishReason>,
    count_sub_agents: bool,
    max_repeated_calls: Option<u32>,
}

impl Default for Guards {
    fn default() -> Self {
        Guards::new()
    }
}

impl Guards {
    /// The usual bundle: 20 steps, 32,768 tokens, 300 s of wall time, 5 identical tool calls.
    pub fn new() -> Self {
        Guards {
            max_steps: Some(20),
            max_tokens: Some(32_768),
            max_wall_time: Some(Duration::from_secs(300)),
            max_repeated_calls: Some(5),
            ..Guards::none()
        }
    }

    /// No limit at all: add the ones you want.
    pub fn none() -> Self {
        Guards {
            max_steps: None,
            max_tokens: None,
            max_wall_time: None,
            max_cost: None,
            finish_reasons: Vec::new(),
            count_sub_agents: false,
            max_repeated_calls: None,
        }
    }

    /// Stops a run once it has taken `steps` steps (`None` turns the limit off).
    pub fn max_steps(mut self, steps: impl Into<Option<u32>>) -> Self {
        self.max_steps = steps.into();
        self
    }

    /// Stops a run once it has used `tokens` tokens, input and output (`None`: off).
    pub fn max_tokens(mut self, tokens: impl Into<Option<u64>>) -> Self {
        self.max_tokens = tokens.into();
        self
    }

    /// Stops a run once `time` has passed since it started (`None`: off).
    pub fn max_wall_time(mut self, time: impl Into<Option<Duration>>) -> Self {
        self.max_wall_time = time.into();
        self
    }

    /// Stops a run once its model calls cost `limit` by `prices` (a model missing from the
    /// table costs nothing, with a warning in the log).
    pub fn max_cost(mut self, limit: f64, prices: PriceTable) -> Self {
        self.max_cost = Some((limit, Arc::new(prices)));
        self
    }

    /// Blocks a tool call once the run has made `calls` identical ones (the same tool with the
    /// same input): the model gets an error result saying so, and the run goes on (`None`:
    /// off).
    pub fn max_repeated_calls(mut self, calls: impl Into<Option<u32>>) -> Self {
        self.max_repeated_calls = calls.into();
        self
    }

    /// Stops a run after a step whose model turn ended with one of `reasons`.
    pub fn stop_on_finish(mut self, reasons: impl IntoIterator<Item = FinishReason>) -> Self {
        self.finish_reasons = reasons.into_iter().collect();
        self
    }

    /// Counts the tokens and cost of sub-agent runs in their parent's (default: each run
    /// counts its own).
    pub fn count_sub_agents(mut self, yes: bool) -> Self {
        self.count_sub_agents = yes;
        self
    }
}

impl IntoHook for Guards {
    fn into_hook(self) -> HookRegistration {
        GuardHook {
            guards: self,
            runs: PerRun::default(),
        }
        .named("guards")
        .priority(GUARD_PRIORITY)
    }
}

/// What the guards count for one run.
struct Budget {
    started: Instant,
    /// The run whose budget counts this one's tokens and cost (itself, or its root run when
    /// sub-agents count).
    payer: String,
    tokens: u64,
    cost: f64,
    finished_with: Option<FinishReason>,
    /// How often each tool call was made, by a hash of its tool and input.
    calls: HashMap<u64, u32>,
}

struct GuardHook {
    guards: Guards,
    runs: PerRun<Budget>,
}

impl GuardHook {
    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<String, Budget>> {
        self.runs.lock()
    }

    fn stop(&self, ctx: &HookCtx, limit: Limit) -> StopReason {
        StopReason::Limit {
            guard: ctx.hook_name().to_owned(),
            limit,
        }
    }

    /// The first limit the run `id`, about to start step `step`, has reached.
    /// Starts the budget of the run `ctx` belongs to: at RunStart, or at the first step of a
    /// run resumed from a checkpoint (which has no RunStart). A resumed run's tokens, cost and
    /// wall time count from the resume; its steps are the run's own.
    fn track(&self, ctx: &HookCtx) {
        let mut runs = self.runs();
        let id = ctx.run_id().to_owned();
        let payer = match ctx.parent_run_id() {
            Some(parent) if self.guards.count_sub_agents => runs
                .get(parent)
                .map_or_else(|| parent.to_owned(), |p| p.payer.clone()),
            _ => id.clone(),
        };
        let started = Instant::now();
        if let Some(limit) = self.guards.max_wall_time {
            // The limit interrupts whatever is in flight when it passes, not only the next step.
            let limit_ms = limit.as_millis() as u64;
            let stop = self.stop(
                ctx,
                Limit::WallTime {
                    elapsed_ms: limit_ms,
                    limit_ms,
                },
            );
            ctx.stop_at(started + limit, stop);
        }
        runs.insert(
            id,
            Budget {
                started,
                payer,
                tokens: 0,
                cost: 0.0,
                finished_with: None,
                calls: HashMap::new(),
            },
        );
    }

    fn reached(&self, id: &str, step: u32) -> Option<Limit> {
        let g = &self.guards;
        let runs = self.runs();
        let run = runs.get(id)?;
        if let Some(limit) = g.max_steps {
            let used = step.saturating_sub(1);
            if used >= limit {
                return Some(Limit::Steps { used, limit });
            }
        }
        let payer = runs.get(&run.payer).unwrap_or(run);
        if let Some(limit) = g.max_tokens
            && payer.tokens >= limit
        {
            return Some(Limit::Tokens {
                used: payer.tokens,
                limit,
            });
        }
        if let Some((limit, _)) = &g.max_cost
            && payer.cost >= *limit
        {
            return Some(Limit::Cost {
                spent: payer.cost,
                limit: *limit,
            });
        }
        if let Some(limit) = g.max_wall_time {
            let elapsed = run.started.elapsed();
            if elapsed >= limit {
                return Some(Limit::WallTime {
                    elapsed_ms: elapsed.as_millis() as u64,
                    limit_ms: limit.as_millis() as u64,
                });
            }
        }
        None
    }
}

impl Hook for GuardHook {
    fn wants(&self) -> Events {
        let calls = match self.guards.max_repeated_calls {
            Some(_) => Events::BEFORE_TOOL,
            None => Events::empty(),
        };
        Events::RUN_START
            | Events::BEFORE_STEP
            | Events::AFTER_MODEL
            | Events::AFTER_STEP
            | Events::RUN_END
            | Events::RUN_FAILED
            | calls
    }

    fn before_tool(
        &self,
        mut ev: BeforeTool,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<BeforeTool>> + Send {
        if let Some(limit) = self.guards.max_repeated_calls {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            ev.name().hash(&mut hasher);
            ev.input.to_string().hash(&mut hasher);
            let key = hasher.finish();
            let made = self
                .runs()
                .get_mut(ctx.run_id())
                .map(|run| {
                    let made = run.calls.entry(key).or_insert(0);
                    *made += 1;
                    *made
                })
                .unwrap_or(0);
            if made > limit {
                ev.block(format!(
                    "this `{}` call, with this same input, was already made {limit} times in this \
                     run and its result will not change: do not repeat it; try another approach, \
                     or answer with what you have (the `{}` guard)",
                    ev.name(),
                    ctx.hook_name()
                ));
            }
        }
        async move { Ok(ev) }
    }

    fn run_start(
        &self,
        ev: RunStart,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<RunStart>> + Send {
        self.track(ctx);
        async move { Ok(ev) }
    }

    fn before_step(
        &self,
        mut ev: BeforeStep,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<BeforeStep>> + Send {
        if !self.runs().contains_key(ctx.run_id()) {
            self.track(ctx);
        }
        if let Some(limit) = self.reached(ctx.run_id(), ev.step()) {
            ev.stop_with(self.stop(ctx, limit));
        }
        async move { Ok(ev) }
    }

    fn after_model(
        &self,
        ev: AfterModel,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<AfterModel>> + Send {
        let usage = ev.response.usage;
        let cost = match &self.guards.max_cost {
            Some((_, prices)) => match prices.price(ev.model()) {
                Some(price) => price.cost(&usage),
                None => {
                    tracing::warn!(model = %ev.model(), "the guards' price table has no price for this model; its calls cost nothing");
                    0.0
                }
            },
            None => 0.0,
        };
        let mut runs = self.runs();
        if let Some(run) = runs.get_mut(ctx.run_id()) {
            if self
                .guards
                .finish_reasons
                .contains(&ev.response.finish_reason)
            {
                run.finished_with = Some(ev.response.finish_reason.clone());
            }
            let payer = run.payer.clone();
            if let Some(payer) = runs.get_mut(&payer) {
                payer.tokens += usage.input_tokens + usage.output_tokens;
                payer.cost += cost;
            }
        }
        async move { Ok(ev) }
    }

    fn after_step(
        &self,
        mut ev: AfterStep,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<AfterStep>> + Send {
        let finished = self
            .runs()
            .get_mut(ctx.run_id())
            .and_then(|run| run.finished_with.take());
        if let Some(reason) = finished {
            let reason = match reason {
                FinishReason::Aborted(why) => format!("aborted: {why}"),
                other => other.as_str().to_owned(),
            };
            ev.stop_with(self.stop(ctx, Limit::FinishReason { reason }));
        }
        async move { Ok(ev) }
    }

    fn run_end(
        &self,
        ev: RunEnd,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<RunEnd>> + Send {
        self.runs.forget(ctx.run_id());
        async move { Ok(ev) }
    }

    fn run_failed(
        &self,
        ev: RunFailed,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<RunFailed>> + Send {
        self.runs.forget(ctx.run_id());
        async move { Ok(ev) }
    }
}
