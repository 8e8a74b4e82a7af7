//! Per-step cost on Temporal against in-process: one run of `S` steps (one `echo` tool call
//! each, then a final answer) with a scripted model, timed both ways, and `R` such runs at once
//! on Temporal; `PLACEMENT` (`scheduled`, the default, `local_hooks` or `local`) says where the
//! runs' activities run (`Client::placement`), `P`, if given and not `default`, sets the
//! workers' pollers (`Worker::pollers(P, P)`), and `W` (1 by default) how many workers run, in
//! this process. The `R` runs are started and awaited all at once, as the `bare` example (the
//! same shape without agentry) does. Needs a Temporal server:
//!
//! ```sh
//! temporal server start-dev --ip 127.0.0.1 --headless --port 7233 &
//! cargo run --release -p agentry-temporal --example steps -- http://127.0.0.1:7233 50 100 [PLACEMENT [P [W]]]
//! ```

use agentry::RunOutput;
use agentry::prelude::*;
use agentry::{Message, ScriptedTurn};
use agentry_temporal::{Client, Placement, Server, Worker};
use std::time::Instant;

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

fn agent(steps: usize) -> Agent {
    let model = ScriptedModel::from_fn(move |_, req| {
        let done = req
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool(_)))
            .count();
        if done < steps {
            ScriptedTurn::new().with_tool_call_id(
                format!("c{done}"),
                "echo",
                json!({"text": "ping"}),
            )
        } else {
            ScriptedTurn::text("done")
        }
    });
    let echo = tool("echo", "Echoes.", |a: Text, _ctx: ToolCtx| async move {
        Ok(a.text)
    });
    Agent::builder("bench")
        .instructions("bench")
        .model(model)
        .tool(echo)
        .max_steps(100_000)
        .build()
        .unwrap()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let target = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:7233".into());
    let steps: usize = args.next().map_or(Ok(50), |s| s.parse())?;
    let runs: usize = args.next().map_or(Ok(100), |s| s.parse())?;
    let placement: Placement = match args.next() {
        Some(name) => serde_json::from_value(json!(name))?,
        None => Placement::Scheduled,
    };
    let pollers: Option<usize> = match args.next().as_deref() {
        None | Some("default") => None,
        Some(p) => Some(p.parse()?),
    };
    let workers: usize = args.next().map_or(Ok(1), |s| s.parse())?;
    let agent = agent(steps);

    let start = Instant::now();
    let local = Runtime::new().run(&agent, "go").await?;
    let local_us = start.elapsed().as_secs_f64() * 1e6 / steps as f64;
    assert_eq!(local.output.as_deref(), Some("done"));

    let server = Server::new(target).task_queue(format!("bench-{}", std::process::id()));
    let mut spawned = Vec::with_capacity(workers);
    for _ in 0..workers {
        let mut worker = Worker::new(server.clone(), Runtime::new()).agent(&agent);
        if let Some(p) = pollers {
            worker = worker.pollers(p, p);
        }
        spawned.push(worker.spawn()?);
    }
    let client = Client::connect(server).await?.placement(placement);
    // Warm-up: the worker's first poll and the connection.
    let _: RunOutput<(), String> = client.run("bench", "go").await?;

    let start = Instant::now();
    let out: RunOutput<(), String> = client.run("bench", "go").await?;
    let remote_us = start.elapsed().as_secs_f64() * 1e6 / steps as f64;
    assert_eq!(out.messages.to_vec(), local.messages.to_vec());
    // What each activity carried before deltas: the whole history, this big at the run's end.
    let history_bytes = serde_json::to_vec(&out.messages)?.len();

    let start = Instant::now();
    let all = (0..runs).map(|_| async {
        let out: RunOutput<(), String> = client.run("bench", "go").await?;
        assert_eq!(out.output.as_deref(), Some("done"));
        Ok::<(), agentry_temporal::TemporalError>(())
    });
    for outcome in futures::future::join_all(all).await {
        outcome?;
    }
    let wall = start.elapsed().as_secs_f64();
    println!(
        "{{\"steps\": {steps}, \"in_process_us_per_step\": {local_us:.1}, \"temporal_us_per_step\": {remote_us:.0}, \"concurrent_runs\": {runs}, \"workers\": {workers}, \"concurrent_wall_s\": {wall:.2}, \"runs_per_s\": {:.1}, \"history_bytes_at_end\": {history_bytes}, \"placement\": {}, \"pollers\": {}}}",
        runs as f64 / wall,
        serde_json::to_string(&placement)?,
        pollers.map_or("\"sdk default\"".to_string(), |p| p.to_string())
    );
    for worker in spawned {
        worker.stop()?;
    }
    Ok(())
}
