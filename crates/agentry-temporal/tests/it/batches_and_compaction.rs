//! BeforeToolBatch and AfterToolBatch hooks, and agents that compact their history, on a real
//! Temporal dev server (started by the test, see `support`): the same hooks see the same events,
//! and the run ends with the same history, as in-process.

use crate::support::DevServer;
use crate::support::agents::{Log, results_in};
use agentry::RunOutput;
use agentry::builtins::Recorder;
use agentry::hooks::AfterToolBatch;
use agentry::prelude::*;
use agentry::{ScriptedTurn, agent::Compaction};
use agentry_temporal::Worker;
use futures::StreamExt;

#[derive(Deserialize, JsonSchema)]
struct City {
    city: String,
}

fn push(log: &Log, line: String) {
    log.lock().unwrap().push(line);
}

/// A planner that asks for the weather in three cities in one turn, then answers; its batch
/// hooks block Rome, start Oslo first and mark every result as checked.
fn planner(log: &Log, recorder: &Recorder) -> Agent {
    let tool_log = log.clone();
    let weather = tool(
        "get_weather",
        "The weather in a city.",
        move |a: City, _ctx: ToolCtx| {
            let log = tool_log.clone();
            async move {
                push(&log, format!("tool:{}", a.city));
                Ok(format!("Sunny in {}", a.city))
            }
        },
    );
    let model = ScriptedModel::from_fn(|_, req| match results_in(req) {
        0 => ScriptedTurn::new()
            .with_tool_call_id("paris", "get_weather", json!({"city": "Paris"}))
            .with_tool_call_id("rome", "get_weather", json!({"city": "Rome"}))
            .with_tool_call_id("oslo", "get_weather", json!({"city": "Oslo"})),
        _ => ScriptedTurn::text("Done."),
    });
    let (before, after) = (log.clone(), log.clone());
    Agent::builder("planner")
        .model(model)
        .tool(weather)
        .parallel_tool_calls(false)
        .with(recorder.clone())
        .with(on::before_tool_batch(move |mut ev, _ctx| {
            push(&before, format!("BeforeToolBatch:{}", ev.calls().len()));
            ev.block("rome", "Rome is closed today");
            ev.reorder(["oslo", "paris"]);
            std::future::ready(Ok(ev))
        }))
        .with(on::after_tool_batch(move |ev, _ctx| {
            let results: Vec<String> = ev
                .results()
                .iter()
                .map(|r| r.content.text().into_owned())
                .collect();
            push(&after, format!("AfterToolBatch:{}", results.join("|")));
            let checked = ev
                .results()
                .iter()
                .map(|r| {
                    let mut r = r.clone();
                    r.content.push_str(" (checked)");
                    r
                })
                .collect();
            std::future::ready(Ok(AfterToolBatch::new(checked)))
        }))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_hooks_block_reorder_and_rewrite_as_in_process() {
    let Some(dev) = DevServer::start("batches").await else {
        return;
    };
    let local_log = Log::default();
    let local_recorder = Recorder::new();
    let local = Runtime::new()
        .run(&planner(&local_log, &local_recorder), "weather?")
        .await
        .unwrap();
    assert_eq!(
        *local_log.lock().unwrap(),
        [
            "BeforeToolBatch:3",
            "tool:Oslo",
            "tool:Paris",
            "AfterToolBatch:Sunny in Paris|Rome is closed today|Sunny in Oslo",
        ]
    );

    let log = Log::default();
    let recorder = Recorder::new();
    let worker = Worker::new(dev.server("batches"), Runtime::new())
        .agent(&planner(&log, &recorder))
        .spawn()
        .unwrap();
    let remote: RunOutput<(), String> = dev
        .client("batches")
        .await
        .run("planner", "weather?")
        .await
        .unwrap();
    worker.stop().unwrap();

    assert_eq!(remote.output.as_deref(), Some("Done."));
    assert_eq!(*log.lock().unwrap(), *local_log.lock().unwrap());
    assert_eq!(remote.messages.to_vec(), local.messages.to_vec());
    assert!(
        remote
            .messages
            .iter()
            .any(|m| m.text().contains("Rome is closed today (checked)")),
        "{:#?}",
        remote.messages
    );
    assert_eq!(recorder.events(), local_recorder.events());
}

#[derive(Deserialize, JsonSchema)]
struct Query {
    q: String,
}

/// A researcher that looks something up four times (each result long), then answers; its
/// history is summarised past 300 tokens, keeping the last two turns.
fn researcher(recorder: &Recorder) -> Agent {
    let lookup = tool(
        "lookup",
        "Looks a topic up.",
        |a: Query, _ctx: ToolCtx| async move { Ok(format!("{}: {}", a.q, "lorem ipsum ".repeat(40))) },
    );
    let model = ScriptedModel::from_fn(|n, _| {
        if n <= 4 {
            ScriptedTurn::tool_call("lookup", json!({"q": format!("topic {n}")}))
        } else {
            ScriptedTurn::text("All done.")
        }
    });
    let summarizer = ScriptedModel::from_fn(|_, req| {
        let words = req.messages[0].text().split_whitespace().count();
        ScriptedTurn::text(format!("summary of {words} words")).with_usage(100, 10)
    });
    Agent::builder("researcher")
        .instructions("You research things.")
        .model(model)
        .tool(lookup)
        .compaction(
            Compaction::summarize(300)
                .keep_recent(2)
                .summarizer(summarizer),
        )
        .with(recorder.clone())
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_compacts_its_history_runs_as_in_process() {
    let Some(dev) = DevServer::start("compaction").await else {
        return;
    };
    let local_recorder = Recorder::new();
    let mut local_run = Runtime::new()
        .run(&researcher(&local_recorder), "Research.")
        .start();
    let mut local_compactions = Vec::new();
    while let Some(event) = local_run.events().next().await {
        if let RunEvent::Compacted {
            removed, summary, ..
        } = event
        {
            local_compactions.push((removed, summary));
        }
    }
    let local = local_run.result().await.unwrap();
    assert!(!local_compactions.is_empty(), "the run never compacted");
    assert!(
        local
            .messages
            .iter()
            .any(|m| m.text().contains("summary of")),
        "{:#?}",
        local.messages
    );

    let recorder = Recorder::new();
    let worker = Worker::new(dev.server("compaction"), Runtime::new())
        .agent(&researcher(&recorder))
        .spawn()
        .unwrap();
    let client = dev.client("compaction").await;
    let handle = client.run("researcher", "Research.").start().await.unwrap();
    let mut compactions = Vec::new();
    let mut events = std::pin::pin!(handle.events());
    while let Some(event) = events.next().await {
        if let RunEvent::Compacted {
            removed, summary, ..
        } = event.unwrap()
        {
            compactions.push((removed, summary));
        }
    }
    let remote: RunOutput<(), String> = handle.result().await.unwrap();
    worker.stop().unwrap();

    assert_eq!(remote.output.as_deref(), Some("All done."));
    assert_eq!(compactions, local_compactions);
    assert_eq!(remote.messages.to_vec(), local.messages.to_vec());
    assert_eq!(remote.usage, local.usage);
    assert_eq!(recorder.events(), local_recorder.events());
}
