//! Hook dispatch: one event to 0, 1 and 10 hooks (sync and async), a state update observed by a
//! StateChange hook, and 10,000 streamed text deltas through a TextDelta observer.

mod support;

use agentry::hooks::{BeforeStep, Events, Hooks, on, on_sync};
use agentry::prelude::*;
use agentry::{FinishReason, ModelEvent, ModelStream, RunContext, RunContextSpec};
use agentry::{Model, ModelRequest};
use criterion::{Criterion, criterion_group, criterion_main};
use futures::executor::block_on;
use std::hint::black_box;

fn context() -> RunContext {
    RunContext::detached(RunContextSpec::new("bench", "bench"))
}

fn sync_hooks(n: usize) -> Hooks {
    let mut hooks = Hooks::new();
    for _ in 0..n {
        hooks.add(on_sync::before_step(|_, _| Ok(())));
    }
    hooks
}

fn async_hooks(n: usize) -> Hooks {
    let mut hooks = Hooks::new();
    for _ in 0..n {
        hooks.add(on::before_step(|ev, _| async move { Ok(ev) }));
    }
    hooks
}

/// What the engine does at each event: check, and only then build the payload and dispatch.
async fn fire(hooks: &Hooks, ctx: &RunContext, step: u32) -> u32 {
    if !hooks.wants(Events::BEFORE_STEP) {
        return step;
    }
    hooks
        .dispatch(BeforeStep::new(step), ctx)
        .await
        .unwrap()
        .step()
}

fn dispatch(c: &mut Criterion) {
    let ctx = context();
    let mut g = c.benchmark_group("dispatch");
    for (label, hooks) in [
        ("0 hooks", Hooks::new()),
        ("1 sync hook", sync_hooks(1)),
        ("10 sync hooks", sync_hooks(10)),
        ("1 async hook", async_hooks(1)),
        ("10 async hooks", async_hooks(10)),
    ] {
        g.bench_function(label, |b| {
            b.iter(|| block_on(fire(&hooks, &ctx, black_box(3))))
        });
    }
    g.finish();
}

#[derive(Clone, Default, Serialize, Deserialize)]
struct Counter {
    n: u64,
}

fn state_update(c: &mut Criterion) {
    let counter = tool("bump", "Adds one.", |_: Value, ctx: ToolCtx| async move {
        ctx.update_state(|s: &mut Counter| s.n += 1)?;
        Ok("ok")
    });
    let steps = 100;
    let model = support::tool_steps(steps, "bump", json!({}));
    let agent = Agent::builder("state")
        .model(model)
        .tool(counter)
        .state(Counter::default())
        .max_steps(steps + 1)
        .with(on_sync::state_change(|ev, _| {
            black_box(&ev.current());
            Ok(())
        }))
        .build()
        .unwrap();
    let rt = support::tokio();
    let runtime = Runtime::new();
    c.bench_function("state update observed (100 steps)", |b| {
        b.iter(|| {
            let out = rt
                .block_on(runtime.run(&agent, "go").into_future())
                .unwrap();
            assert_eq!(out.state.n, u64::from(steps));
        })
    });
}

/// Streams `n` one-word deltas, then stops.
struct Chatty {
    n: usize,
}

impl Model for Chatty {
    fn name(&self) -> &str {
        "chatty"
    }
    fn stream<'a>(&'a self, _: &'a ModelRequest) -> ModelStream<'a> {
        let deltas = (0..self.n).map(|_| Ok(ModelEvent::TextDelta("w ".to_string())));
        let end = std::iter::once(Ok(ModelEvent::Finish(FinishReason::Stop)));
        Box::pin(futures::stream::iter(deltas.chain(end)))
    }
}

fn text_deltas(c: &mut Criterion) {
    let rt = support::tokio();
    let runtime = Runtime::new();
    let mut g = c.benchmark_group("10k text deltas");
    let plain = Agent::builder("chatty")
        .model(Chatty { n: 10_000 })
        .build()
        .unwrap();
    let observed = Agent::builder("chatty")
        .model(Chatty { n: 10_000 })
        .with(on_sync::text_delta(|ev, _| {
            black_box(&ev.text);
            Ok(())
        }))
        .build()
        .unwrap();
    g.bench_function("no observer", |b| {
        b.iter(|| {
            rt.block_on(runtime.run(&plain, "go").into_future())
                .unwrap()
        })
    });
    g.bench_function("TextDelta observer", |b| {
        b.iter(|| {
            rt.block_on(runtime.run(&observed, "go").into_future())
                .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, dispatch, state_update, text_deltas);
criterion_main!(benches);
