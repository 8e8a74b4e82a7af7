//! One full step (model call returning a tool call, the tool, the history growing by two
//! messages), measured over runs of 100 steps.

mod support;

use agentry::prelude::*;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

fn full_step(c: &mut Criterion) {
    let steps = 100;
    let model = support::tool_steps(steps, "echo", json!({"text": "ping"}));
    let echo = tool(
        "echo",
        "Returns its text.",
        |a: Echo, _ctx: ToolCtx| async move { Ok(a.text) },
    );
    let agent = Agent::builder("bench")
        .instructions("bench")
        .model(model)
        .tool(echo)
        .max_steps(steps + 1)
        .build()
        .unwrap();
    let rt = support::tokio();
    let runtime = Runtime::new();
    let mut g = c.benchmark_group("step");
    g.throughput(Throughput::Elements(u64::from(steps)));
    g.bench_function("full step (runs of 100)", |b| {
        b.iter(|| {
            let out = rt
                .block_on(runtime.run(&agent, "go").into_future())
                .unwrap();
            assert_eq!(out.steps, steps + 1);
        })
    });
    g.finish();
}

criterion_group!(benches, full_step);
criterion_main!(benches);
