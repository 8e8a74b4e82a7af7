//! BeforeToolBatch and AfterToolBatch: all the tool calls of one model turn, seen together.

use crate::common::*;
use agentry::hooks::*;
use agentry::prelude::*;
use agentry::{ToolFailure, ToolResult};

/// A `weather` tool that logs `tool:<city>` and a model that asks for three cities in one turn.
fn three_cities(log: &Log, parallel: bool) -> (ScriptedModel, Agent) {
    let model = ScriptedModel::new()
        .tool_calls([
            ("get_weather", json!({"city": "Paris"})),
            ("get_weather", json!({"city": "Rome"})),
            ("get_weather", json!({"city": "Oslo"})),
        ])
        .text("Done.");
    let agent = Agent::builder("planner")
        .model(model.clone())
        .tool(weather(log, &Counter::default()))
        .parallel_tool_calls(parallel)
        .with(
            on::with(log.clone()).before_tool(|log, ev, _ctx| async move {
                push(
                    &log,
                    format!("BeforeTool:{}", ev.input["city"].as_str().unwrap()),
                );
                Ok(ev)
            }),
        )
        .with(
            on::with(log.clone()).before_tool_batch(|log, mut ev, _ctx| async move {
                let cities: Vec<String> = ev
                    .calls()
                    .iter()
                    .map(|c| {
                        serde_json::from_str::<Value>(&c.arguments).unwrap()["city"].to_string()
                    })
                    .collect();
                push(&log, format!("BeforeToolBatch:{}", cities.join(",")));
                let (paris, rome, oslo) = {
                    let c = ev.calls();
                    (c[0].id.clone(), c[1].id.clone(), c[2].id.clone())
                };
                ev.block(&rome, "Rome is closed today");
                ev.reorder([oslo, paris]);
                Ok(ev)
            }),
        )
        .with(
            on::with(log.clone()).after_tool_batch(|log, ev, _ctx| async move {
                let results: Vec<&str> = ev
                    .results()
                    .iter()
                    .map(|r| r.content.as_text().unwrap_or_default())
                    .collect();
                push(&log, format!("AfterToolBatch:{}", results.join("|")));
                Ok(ev)
            }),
        )
        .build()
        .unwrap();
    (model, agent)
}

#[tokio::test]
async fn a_batch_hook_blocks_one_call_and_sets_the_order_the_others_start_in() {
    let log = new_log();
    let (model, agent) = three_cities(&log, false);
    let out = Runtime::new().run(&agent, "weather?").await.unwrap();
    assert_eq!(out.text, "Done.");
    assert_eq!(
        entries(&log),
        [
            "BeforeToolBatch:\"Paris\",\"Rome\",\"Oslo\"",
            "BeforeTool:Oslo",
            "tool:Oslo",
            "BeforeTool:Paris",
            "tool:Paris",
            "AfterToolBatch:Sunny in Paris|Rome is closed today|Sunny in Oslo",
        ],
        "Rome never ran (no BeforeTool); Oslo started first"
    );
    // The model gets the results in the order it asked for the calls.
    let sent: Vec<ToolResult> = model.requests()[1]
        .messages
        .iter()
        .filter_map(|m| m.tool_result().cloned())
        .collect();
    let contents: Vec<&str> = sent
        .iter()
        .map(|r| r.content.as_text().unwrap_or_default())
        .collect();
    assert_eq!(
        contents,
        ["Sunny in Paris", "Rome is closed today", "Sunny in Oslo"]
    );
    assert!(sent[1].is_error, "a blocked call is an error result");
}

#[tokio::test]
async fn batches_of_concurrent_calls_are_seen_the_same_way() {
    let log = new_log();
    let (_model, agent) = three_cities(&log, true);
    Runtime::new().run(&agent, "weather?").await.unwrap();
    let seen = entries(&log);
    assert_eq!(
        seen.first().unwrap(),
        "BeforeToolBatch:\"Paris\",\"Rome\",\"Oslo\""
    );
    assert_eq!(
        seen.last().unwrap(),
        "AfterToolBatch:Sunny in Paris|Rome is closed today|Sunny in Oslo"
    );
    assert!(!seen.contains(&"tool:Rome".to_string()));
}

#[tokio::test]
async fn batch_events_fire_once_per_turn_with_tool_calls() {
    let (log, counter) = (new_log(), Counter::default());
    let model = ScriptedModel::new()
        .tool_call("get_weather", json!({"city": "Paris"}))
        .tool_call("get_weather", json!({"city": "Rome"}))
        .text("Done.");
    let agent = Agent::builder("planner")
        .model(model)
        .tool(weather(&log, &counter))
        .with(on_sync::before_tool_batch(|ev, _ctx| {
            assert_eq!(ev.calls().len(), 1);
            Ok(())
        }))
        .with(
            on::with(log.clone()).after_tool_batch(|log, ev, _ctx| async move {
                push(&log, format!("batch of {}", ev.results().len()));
                Ok(ev)
            }),
        )
        .build()
        .unwrap();
    Runtime::new().run(&agent, "go").await.unwrap();
    assert_eq!(
        entries(&log),
        ["tool:Paris", "batch of 1", "tool:Rome", "batch of 1"],
        "two turns with a call each; none for the final answer"
    );
}

#[derive(Deserialize, JsonSchema)]
struct Hotel {
    city: String,
}

#[tokio::test]
async fn a_turn_resumed_after_an_approval_follows_the_batch_hooks_first_decision() {
    // Paris runs, Rome is blocked by the batch hook, the hotel in Oslo waits for a person. The
    // run resumes on another runtime (as another process would): the batch hook is not asked
    // again, and Rome stays blocked.
    let log = new_log();
    let model = ScriptedModel::new()
        .tool_calls([
            ("get_weather", json!({"city": "Paris"})),
            ("get_weather", json!({"city": "Rome"})),
            ("book_hotel", json!({"city": "Oslo"})),
        ])
        .text("Booked.");
    let hotel_log = log.clone();
    let agent = Agent::builder("travel")
        .model(model.clone())
        .tool(weather(&log, &Counter::default()))
        .tool(
            tool(
                "book_hotel",
                "Books a hotel.",
                move |h: Hotel, _c: ToolCtx| {
                    let log = hotel_log.clone();
                    async move {
                        push(&log, format!("hotel:{}", h.city));
                        Ok::<_, ToolFailure>(format!("Booked in {}", h.city))
                    }
                },
            )
            .needs_approval(),
        )
        .with(
            on::with(log.clone()).before_tool_batch(|log, mut ev, _ctx| async move {
                push(&log, "BeforeToolBatch");
                let rome = ev.calls()[1].id.clone();
                ev.block(&rome, "Rome is closed today");
                Ok(ev)
            }),
        )
        .build()
        .unwrap();
    let store = MemoryStore::new();
    let paused = Runtime::new()
        .store(store.clone())
        .run(&agent, "Plan my trip.")
        .await
        .unwrap();
    let StopReason::AwaitingApproval { pending } = &paused.stop else {
        panic!("{:?}", paused.stop)
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(entries(&log), ["BeforeToolBatch", "tool:Paris"]);

    let done = Runtime::new()
        .store(store)
        .decide(
            &agent,
            &paused.run_id,
            [agentry::Decision::approve(pending[0].call_id.clone())],
        )
        .await
        .unwrap();
    assert_eq!(done.output.as_deref(), Some("Booked."));
    assert_eq!(
        entries(&log),
        ["BeforeToolBatch", "tool:Paris", "hotel:Oslo"],
        "the batch hook ran once for the turn; Rome never ran"
    );
    let results: Vec<String> = model.requests()[1]
        .messages
        .iter()
        .filter_map(|m| m.tool_result().map(|r| r.content.text().into_owned()))
        .collect();
    assert_eq!(
        results,
        ["Sunny in Paris", "Rome is closed today", "Booked in Oslo"]
    );
}
