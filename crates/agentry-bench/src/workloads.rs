//! The workloads: W1 (one long run), W2 (W1 plus no-op hooks), W3 (many concurrent runs).

use crate::model::EchoScript;
use agentry::Content;
use agentry::hooks::{on_mut, on_sync};
use agentry::prelude::*;
use std::time::{Duration, Instant};

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

/// Which kind of no-op hook W2 registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum HookKind {
    /// Synchronous closure hooks (`on_sync`): run in place, no allocation.
    Sync,
    /// Async closure hooks (`on`): a future per invocation, held inline (no allocation).
    Async,
    /// Async in-place hooks (`on_mut`): a future per invocation that borrows the event, held
    /// inline (no allocation, no move of the event).
    InPlace,
}

/// The agent of every workload: the echo tool, the `bench` system prompt, `hooks` no-op hooks on
/// each of BeforeModel, AfterModel, BeforeTool and AfterTool.
pub(crate) fn agent(steps: u32, hooks: u32, kind: HookKind, yield_per_call: bool) -> Agent {
    let echo = tool(
        "echo",
        "Returns its text argument.",
        |a: Echo, _ctx: ToolCtx| async move { Ok(a.text) },
    );
    let mut b = Agent::builder("bench")
        .instructions("bench")
        .model(EchoScript {
            steps,
            yield_per_call,
        })
        .tool(echo)
        .max_steps(steps + 1);
    for _ in 0..hooks {
        b = match kind {
            HookKind::Async => b
                .before_model(|ev, _| async move { Ok(ev) })
                .after_model(|ev, _| async move { Ok(ev) })
                .before_tool(|ev, _| async move { Ok(ev) })
                .after_tool(|ev, _| async move { Ok(ev) }),
            HookKind::InPlace => b
                .with(on_mut::before_model(async |_, _| Ok(())))
                .with(on_mut::after_model(async |_, _| Ok(())))
                .with(on_mut::before_tool(async |_, _| Ok(())))
                .with(on_mut::after_tool(async |_, _| Ok(()))),
            HookKind::Sync => b
                .with(on_sync::before_model(|_, _| Ok(())))
                .with(on_sync::after_model(|_, _| Ok(())))
                .with(on_sync::before_tool(|_, _| Ok(())))
                .with(on_sync::after_tool(|_, _| Ok(()))),
        };
    }
    b.build().expect("the bench agent is valid")
}

/// Runs one agent to the end and checks it ended with `done` after `steps + 1` model calls.
pub(crate) async fn run_checked(runtime: &Runtime, agent: &Agent, steps: u32, input: &Content) {
    let out = runtime
        .run(agent, input.clone())
        .await
        .expect("the bench run succeeds");
    assert_eq!(
        out.output.as_deref(),
        Some("done"),
        "the run must end with `done`"
    );
    assert_eq!(
        out.model_calls,
        steps + 1,
        "the run must make S+1 model calls"
    );
    assert_eq!(
        out.messages.len() as u32,
        2 * steps + 2,
        "the history must hold every message"
    );
}

/// One timed sample.
pub(crate) struct Sample {
    pub wall: Duration,
    pub cpu: Duration,
}

/// Times `runs` concurrent runs of `steps` steps (one run for W1/W2).
pub(crate) async fn sample(
    runtime: &Runtime,
    agent: &Agent,
    steps: u32,
    runs: u32,
    input: &Content,
) -> Sample {
    let cpu0 = crate::measure::cpu_time();
    let t0 = Instant::now();
    if runs == 1 {
        run_checked(runtime, agent, steps, input).await;
    } else {
        let tasks: Vec<_> = (0..runs)
            .map(|_| {
                let (rt, ag, input) = (runtime.clone(), agent.clone(), input.clone());
                tokio::spawn(async move { run_checked(&rt, &ag, steps, &input).await })
            })
            .collect();
        for t in tasks {
            t.await.expect("a bench run panicked");
        }
    }
    Sample {
        wall: t0.elapsed(),
        cpu: crate::measure::cpu_time() - cpu0,
    }
}

/// The median of some durations.
pub(crate) fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}
