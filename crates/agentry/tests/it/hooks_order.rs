//! The order in which hook events fire, and the order in which hooks of one event run
//! (priority, registration order, scope, and the reverse order of after-events).

use crate::common::*;
use agentry::hooks::*;
use agentry::prelude::*;
use agentry::{RunOptions, ScriptedTurn, Tool, ToolFailure};

fn agent_with(model: ScriptedModel) -> agentry::AgentBuilder<(), String> {
    Agent::builder("agent").model(model)
}

#[tokio::test]
async fn a_minimal_run_fires_its_events_in_lifecycle_order() {
    let plain = new_log();
    let streamed = new_log();
    let agent = agent_with(ScriptedModel::new().text("Hello!"))
        .with(Recorder::new(&plain).events(lifecycle_unstreamed()))
        .with(Recorder::new(&streamed))
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Hi").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("Hello!"));
    assert_eq!(out.stop, StopReason::FinalAnswer);
    assert_eq!(
        entries(&plain),
        [
            "RunStart",
            "MessageAdded:user",
            "BeforeStep:1",
            "BeforeModel",
            "AfterModel",
            "MessageAdded:assistant",
            "AfterStep:1",
            "Stop:FinalAnswer",
            "RunEnd",
        ]
    );
    // Streamed text is reported between BeforeModel and AfterModel.
    assert_eq!(
        entries(&streamed),
        [
            "RunStart",
            "MessageAdded:user",
            "BeforeStep:1",
            "BeforeModel",
            "TextDelta:Hello!",
            "AfterModel",
            "MessageAdded:assistant",
            "AfterStep:1",
            "Stop:FinalAnswer",
            "RunEnd",
        ]
    );
}

#[tokio::test]
async fn streamed_reasoning_and_text_fire_one_event_per_delta_in_stream_order() {
    let log = new_log();
    let turn = ScriptedTurn::new()
        .with_thinking("let me see")
        .with_text_deltas(["Hel", "lo", "!"]);
    let agent = agent_with(ScriptedModel::new().turn(turn))
        .with(Recorder::new(&log).events(
            Events::BEFORE_MODEL | Events::AFTER_MODEL | Events::TEXT_DELTA | Events::THINKING,
        ))
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Hi").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("Hello!"));
    assert_eq!(
        entries(&log),
        [
            "BeforeModel",
            "Thinking:let me see",
            "TextDelta:Hel",
            "TextDelta:lo",
            "TextDelta:!",
            "AfterModel",
        ]
    );
}

#[derive(Default, Clone, Serialize, Deserialize)]
struct Trip {
    visited: Vec<String>,
}

#[tokio::test]
async fn a_tool_call_fires_before_tool_then_the_body_then_state_change_then_after_tool() {
    let log = new_log();
    let body_log = log.clone();
    let weather = tool(
        "get_weather",
        "Current weather for a city",
        move |a: City, ctx: ToolCtx| {
            let log = body_log.clone();
            async move {
                push(&log, format!("tool body:{}", a.city));
                ctx.update_state(|s: &mut Trip| s.visited.push(a.city.clone()))?;
                Ok::<_, ToolFailure>(format!("Sunny in {}", a.city))
            }
        },
    );
    let model = ScriptedModel::new()
        .tool_call("get_weather", json!({"city": "Paris"}))
        .text("Sunny, go.");
    let agent = agent_with(model)
        .tool(weather)
        .state(Trip::default())
        .with(Recorder::new(&log))
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("Sunny, go."));
    assert_eq!(out.state.visited, ["Paris"]);
    assert_eq!(
        entries(&log),
        [
            "RunStart",
            "MessageAdded:user",
            "BeforeStep:1",
            "BeforeModel",
            "AfterModel",
            "MessageAdded:assistant",
            "BeforeTool:get_weather",
            "tool body:Paris",
            "StateChange:tool:get_weather",
            "AfterTool:get_weather",
            "MessageAdded:tool",
            "AfterStep:1",
            "BeforeStep:2",
            "BeforeModel",
            "TextDelta:Sunny, go.",
            "AfterModel",
            "MessageAdded:assistant",
            "AfterStep:2",
            "Stop:FinalAnswer",
            "RunEnd",
        ]
    );
}

#[derive(Deserialize, JsonSchema)]
struct Job {
    job: String,
}

/// A tool that fails with an error for `"fail"` and panics for `"panic"`.
fn fragile(log: &Log) -> impl Tool + use<> {
    let log = log.clone();
    tool(
        "fragile",
        "Fails on demand",
        move |a: Job, _ctx: ToolCtx| {
            let log = log.clone();
            async move {
                push(&log, format!("tool body:{}", a.job));
                if a.job == "panic" {
                    panic!("kaboom");
                }
                if a.job == "fail" {
                    return Err(ToolFailure::new("disk full"));
                }
                Ok(format!("done {}", a.job))
            }
        },
    )
}

async fn run_fragile(job: &str) -> (Vec<String>, Vec<String>, ScriptedModel) {
    let log = new_log();
    let errors = new_log();
    let seen = errors.clone();
    let model = ScriptedModel::new()
        .tool_call("fragile", json!({"job": job}))
        .text("Sorry.");
    let agent = agent_with(model.clone())
        .tool(fragile(&log))
        .with(Recorder::new(&log).events(lifecycle_unstreamed()))
        .tool_failed(move |ev, _ctx| {
            push(&seen, ev.error());
            async move { Ok(ev) }
        })
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "go").await.unwrap();
    assert_eq!(out.output.as_deref(), Some("Sorry."));
    (entries(&log), entries(&errors), model)
}

#[tokio::test]
async fn a_failing_tool_fires_tool_error_and_not_after_tool() {
    let (trace, errors, model) = run_fragile("fail").await;

    assert_eq!(
        trace,
        [
            "RunStart",
            "MessageAdded:user",
            "BeforeStep:1",
            "BeforeModel",
            "AfterModel",
            "MessageAdded:assistant",
            "BeforeTool:fragile",
            "tool body:fail",
            "ToolFailed:fragile",
            "MessageAdded:tool",
            "AfterStep:1",
            "BeforeStep:2",
            "BeforeModel",
            "AfterModel",
            "MessageAdded:assistant",
            "AfterStep:2",
            "Stop:FinalAnswer",
            "RunEnd",
        ]
    );
    assert_eq!(errors, ["disk full"]);
    let sent = model.requests()[1].messages.last().unwrap().clone();
    let result = sent.tool_result().expect("a tool result");
    assert!(result.is_error);
    assert_eq!(result.content, "disk full");
}

#[tokio::test]
async fn a_panicking_tool_fires_tool_error_with_the_panic_and_not_after_tool() {
    let (trace, errors, model) = run_fragile("panic").await;

    let tool_part: Vec<&str> = trace[6..10].iter().map(String::as_str).collect();
    assert_eq!(
        tool_part,
        [
            "BeforeTool:fragile",
            "tool body:panic",
            "ToolFailed:fragile",
            "MessageAdded:tool"
        ]
    );
    assert!(
        !trace.iter().any(|l| l.starts_with("AfterTool")),
        "{trace:?}"
    );
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].contains("panicked") && errors[0].contains("kaboom"),
        "{errors:?}"
    );
    let sent = model.requests()[1].messages.last().unwrap().clone();
    let result = sent.tool_result().expect("a tool result");
    assert!(result.is_error);
    assert!(
        result.content.text().contains("panicked"),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn equal_priorities_keep_registration_order_and_higher_priorities_run_first() {
    let log = new_log();
    let mut builder = agent_with(ScriptedModel::new().text("ok"));
    for (name, priority) in [("0a", 0), ("10a", 10), ("0b", 0), ("10b", 10)] {
        builder = builder
            .with(
                on::before_model(mark(&log, &format!("before:{name}")))
                    .named(name)
                    .priority(priority),
            )
            .with(
                on::after_model(mark(&log, &format!("after:{name}")))
                    .named(name)
                    .priority(priority),
            );
    }
    let agent = builder.build().unwrap();

    Runtime::new().run(&agent, "Hi").await.unwrap();

    assert_eq!(
        entries(&log),
        [
            "before:10a",
            "before:10b",
            "before:0a",
            "before:0b",
            // after-events run the same list in reverse
            "after:0b",
            "after:0a",
            "after:10b",
            "after:10a",
        ]
    );
}

#[tokio::test]
async fn at_equal_priority_runtime_hooks_run_before_agent_hooks_before_run_hooks() {
    let log = new_log();
    let runtime = Runtime::new()
        .with(on::before_model(mark(&log, "before:runtime")))
        .with(on::after_model(mark(&log, "after:runtime")));
    let agent = agent_with(ScriptedModel::new().text("ok"))
        .with(on::before_model(mark(&log, "before:agent.with")))
        .before_model(mark(&log, "before:agent.before_model"))
        .with(on::after_model(mark(&log, "after:agent.with")))
        .after_model(mark(&log, "after:agent.after_model"))
        .build()
        .unwrap();
    let options = RunOptions::new()
        .with(on::before_model(mark(&log, "before:run")))
        .with(on::after_model(mark(&log, "after:run")))
        // A higher priority wins over scope.
        .with(on::before_model(mark(&log, "before:run@1")).priority(1))
        .with(on::after_model(mark(&log, "after:run@1")).priority(1));

    runtime.run(&agent, "Hi").with(options).await.unwrap();

    assert_eq!(
        entries(&log),
        [
            "before:run@1",
            "before:runtime",
            "before:agent.with",
            "before:agent.before_model",
            "before:run",
            "after:run",
            "after:agent.after_model",
            "after:agent.with",
            "after:runtime",
            "after:run@1",
        ]
    );
}

#[tokio::test]
async fn runtime_hooks_see_every_run_and_run_hooks_only_their_own() {
    let log = new_log();
    let runtime = Runtime::new().with(on::run_start(mark(&log, "runtime")));
    let agent = agent_with(ScriptedModel::new().text("one").text("two"))
        .build()
        .unwrap();

    let opts = RunOptions::new().with(on::run_start(mark(&log, "run 1 only")));
    runtime.run(&agent, "first").with(opts).await.unwrap();
    runtime.run(&agent, "second").await.unwrap();

    assert_eq!(entries(&log), ["runtime", "run 1 only", "runtime"]);
}

fn paired() -> Events {
    Events::RUN_START
        | Events::RUN_END
        | Events::BEFORE_STEP
        | Events::AFTER_STEP
        | Events::BEFORE_MODEL
        | Events::AFTER_MODEL
        | Events::BEFORE_TOOL
        | Events::AFTER_TOOL
        | Events::STOP
}

#[tokio::test]
async fn after_events_run_hooks_in_reverse_so_pairs_nest_like_an_onion() {
    let log = new_log();
    let tool_log = new_log();
    let model = ScriptedModel::new()
        .tool_call("get_weather", json!({"city": "Oslo"}))
        .text("Cold.");
    let agent = agent_with(model)
        .tool(weather(&tool_log, &Counter::default()))
        .with(Recorder::new(&log).events(paired()).tagged("A"))
        .with(Recorder::new(&log).events(paired()).tagged("B"))
        .build()
        .unwrap();

    Runtime::new().run(&agent, "Oslo?").await.unwrap();

    assert_eq!(
        entries(&log),
        [
            "A RunStart",
            "B RunStart",
            "A BeforeStep:1",
            "B BeforeStep:1",
            "A BeforeModel",
            "B BeforeModel",
            "B AfterModel",
            "A AfterModel",
            "A BeforeTool:get_weather",
            "B BeforeTool:get_weather",
            "B AfterTool:get_weather",
            "A AfterTool:get_weather",
            "B AfterStep:1",
            "A AfterStep:1",
            "A BeforeStep:2",
            "B BeforeStep:2",
            "A BeforeModel",
            "B BeforeModel",
            "B AfterModel",
            "A AfterModel",
            "B AfterStep:2",
            "A AfterStep:2",
            "A Stop:FinalAnswer",
            "B Stop:FinalAnswer",
            "B RunEnd",
            "A RunEnd",
        ]
    );
}

#[tokio::test]
async fn error_events_also_run_hooks_in_reverse() {
    let log = new_log();
    let model = ScriptedModel::new()
        .tool_call("fragile", json!({"job": "fail"}))
        .error(agentry::ModelErrorKind::Server, "upstream down");
    let events = Events::BEFORE_TOOL | Events::TOOL_FAILED | Events::RUN_FAILED;
    let agent = agent_with(model)
        .tool(fragile(&new_log()))
        .with(Recorder::new(&log).events(events).tagged("A"))
        .with(Recorder::new(&log).events(events).tagged("B"))
        .build()
        .unwrap();

    let err = Runtime::new().run(&agent, "go").await.unwrap_err();

    assert!(matches!(err, Error::Model(_)), "{err:?}");
    assert_eq!(
        entries(&log),
        [
            "A BeforeTool:fragile",
            "B BeforeTool:fragile",
            "B ToolFailed:fragile",
            "A ToolFailed:fragile",
            "B RunFailed",
            "A RunFailed",
        ]
    );
}

#[tokio::test]
async fn the_outermost_after_hook_sees_the_inner_hooks_rewrite() {
    let seen = new_log();
    let outer_seen = seen.clone();
    let agent = agent_with(ScriptedModel::new().text("raw"))
        // registered first: outermost, so it runs last on AfterModel
        .after_model(move |ev, _ctx| {
            push(&outer_seen, format!("outer saw {}", ev.response.text));
            async move { Ok(ev) }
        })
        .after_model(|mut ev, _ctx| async move {
            ev.response.text = format!("{} (inner)", ev.response.text);
            Ok(ev)
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Hi").await.unwrap();

    assert_eq!(entries(&seen), ["outer saw raw (inner)"]);
    assert_eq!(out.output.as_deref(), Some("raw (inner)"));
}

#[tokio::test]
async fn parallel_tool_calls_fire_their_results_in_call_order() {
    let log = new_log();
    let model = ScriptedModel::new()
        .tool_calls([
            ("get_weather", json!({"city": "Rome"})),
            ("get_weather", json!({"city": "Oslo"})),
        ])
        .text("Done.");
    let agent = agent_with(model.clone())
        .tool(weather(&new_log(), &Counter::default()))
        .with(Recorder::new(&log).events(Events::MESSAGE_ADDED | Events::AFTER_STEP))
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Rome and Oslo?").await.unwrap();

    assert_eq!(
        entries(&log),
        [
            "MessageAdded:user",
            "MessageAdded:assistant",
            "MessageAdded:tool",
            "MessageAdded:tool",
            "AfterStep:1",
            "MessageAdded:assistant",
            "AfterStep:2",
        ]
    );
    let contents: Vec<String> = tool_results(&out.messages)
        .into_iter()
        .map(|r| r.content.text().into_owned())
        .collect();
    assert_eq!(contents, ["Sunny in Rome", "Sunny in Oslo"]);
}
