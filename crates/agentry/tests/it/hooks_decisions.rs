//! What hooks can decide: block, mock, rewrite, skip, stop, veto, answer, retry, recover, abort,
//! and around middleware that caches, times and retries.

use crate::common::*;
use agentry::hooks::*;
use agentry::prelude::*;
use agentry::{Message, ModelResponse, ScriptedTurn, Tool, ToolFailure, ToolResult};
use agentry::{ModelErrorKind, ToolCall};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn weather_agent(
    model: &ScriptedModel,
    log: &Log,
    calls: &Counter,
) -> agentry::AgentBuilder<(), String> {
    Agent::builder("planner")
        .model(model.clone())
        .tool(weather(log, calls))
}

fn paris_then(answer: &str) -> ScriptedModel {
    ScriptedModel::new()
        .tool_call("get_weather", json!({"city": "Paris"}))
        .text(answer)
}

/// The tool result the model received in its request number `n` (0-based): the last message.
fn result_sent(model: &ScriptedModel, n: usize) -> ToolResult {
    model.requests()[n]
        .messages
        .last()
        .and_then(|m| m.tool_result().cloned())
        .expect("the last message of the request is a tool result")
}

// ---------------------------------------------------------------- BeforeTool

#[tokio::test]
async fn tool_started_carries_the_input_after_before_tool_hooks() {
    use futures::StreamExt;
    let (log, calls) = (new_log(), Counter::default());
    let agent = weather_agent(&paris_then("Fine."), &log, &calls)
        .before_tool(|mut ev, _ctx| async move {
            ev.input = json!({"city": "Rome"});
            Ok(ev)
        })
        .build()
        .unwrap();
    let mut run = Runtime::new().run(&agent, "Paris?").start();
    let mut started = Vec::new();
    while let Some(ev) = run.events().next().await {
        if let RunEvent::ToolStarted { input, .. } = ev {
            started.push(input);
        }
    }
    run.result().await.unwrap();
    assert_eq!(started, [json!({"city": "Rome"})]);
    assert_eq!(entries(&log), ["tool:Rome"], "the tool got the same input");
}

#[tokio::test]
async fn before_tool_block_keeps_the_tool_from_running_and_the_model_sees_the_reason() {
    let (log, calls, later) = (new_log(), Counter::default(), Counter::default());
    let model = paris_then("Cannot check.");
    let after = new_log();
    let after_seen = after.clone();
    let later_hook = later.clone();
    let agent = weather_agent(&model, &log, &calls)
        .before_tool(|mut ev, _ctx| async move {
            if ev.input["city"] == "Paris" {
                ev.block("Paris is off limits today");
            }
            Ok(ev)
        })
        .before_tool(move |mut ev, _ctx| {
            // A later hook sees the blocked call; what it does to it is dropped.
            later_hook.bump();
            assert_eq!(
                format!("{:?}", ev.decision()),
                r#"Some(Block("Paris is off limits today"))"#
            );
            ev.input = json!({"city": "Rome"});
            ev.mock("a later mock");
            async move { Ok(ev) }
        })
        .after_tool(move |ev, _ctx| {
            push(&after_seen, format!("{} error={}", ev.content, ev.is_error));
            async move { Ok(ev) }
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("Cannot check."));
    assert_eq!(calls.get(), 0, "a blocked tool must not run");
    assert_eq!(
        later.get(),
        1,
        "every hook sees the event; the block stands"
    );
    let sent = result_sent(&model, 1);
    assert!(sent.is_error);
    assert!(!sent.mocked);
    assert_eq!(sent.content, "Paris is off limits today");
    assert_eq!(sent.call_id, "call_1_1");
    // AfterTool still sees the (blocked) result.
    assert_eq!(entries(&after), ["Paris is off limits today error=true"]);
}

#[tokio::test]
async fn before_tool_mock_answers_the_call_and_the_first_mock_stands() {
    let (log, calls, second) = (new_log(), Counter::default(), Counter::default());
    let model = paris_then("Rainy, stay.");
    let second_hook = second.clone();
    let agent = weather_agent(&model, &log, &calls)
        .with(
            on::before_tool(|mut ev, _ctx| async move {
                ev.mock("Rain in Paris");
                Ok(ev)
            })
            .named("mock-weather"),
        )
        .with(
            on::before_tool(move |mut ev, _ctx| {
                second_hook.bump();
                async move {
                    ev.mock("second mock");
                    Ok(ev)
                }
            })
            .named("second-mock"),
        )
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("Rainy, stay."));
    assert_eq!(calls.get(), 0, "a mocked tool must not run");
    assert_eq!(
        second.get(),
        1,
        "the second hook sees the mocked call, read-only"
    );
    let results = tool_results(&out.messages);
    assert_eq!(
        results,
        [ToolResult {
            call_id: "call_1_1".into(),
            name: "get_weather".into(),
            content: "Rain in Paris".into(),
            is_error: false,
            mocked: true,
        }]
    );
    assert_eq!(result_sent(&model, 1).content, "Rain in Paris");
}

#[tokio::test]
async fn before_tool_rewrites_the_input_the_tool_receives() {
    let (log, calls) = (new_log(), Counter::default());
    let model = paris_then("ok");
    let agent = weather_agent(&model, &log, &calls)
        .before_tool(|mut ev, _ctx| async move {
            ev.input = json!({"city": "Rome"});
            Ok(ev)
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(entries(&log), ["tool:Rome"]);
    assert_eq!(result_sent(&model, 1).content, "Sunny in Rome");
    // The history keeps what the model asked for.
    let asked = out.messages.get(1).unwrap().tool_calls()[0]
        .arguments
        .clone();
    assert_eq!(
        serde_json::from_str::<Value>(&asked).unwrap(),
        json!({"city": "Paris"})
    );
}

#[tokio::test]
async fn before_tool_rewrite_is_validated_against_the_tool_schema() {
    let (log, calls) = (new_log(), Counter::default());
    let model = paris_then("ok");
    let agent = weather_agent(&model, &log, &calls)
        .before_tool(|mut ev, _ctx| async move {
            ev.input = json!({"town": "Rome"});
            Ok(ev)
        })
        .build()
        .unwrap();

    Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(calls.get(), 0);
    let sent = result_sent(&model, 1);
    assert!(sent.is_error);
    assert!(sent.content.contains("do not match its schema"), "{sent:?}");
}

// ---------------------------------------------------------------- AfterTool / ToolFailed

#[tokio::test]
async fn after_tool_rewrites_the_result_the_model_sees() {
    let (log, calls) = (new_log(), Counter::default());
    let model = paris_then("ok");
    let agent = weather_agent(&model, &log, &calls)
        .after_tool(|mut ev, _ctx| async move {
            assert_eq!(*ev.input(), json!({"city": "Paris"}));
            ev.content = format!("{} (checked)", ev.content);
            Ok(ev)
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(calls.get(), 1);
    assert_eq!(result_sent(&model, 1).content, "Sunny in Paris (checked)");
    assert_eq!(
        tool_results(&out.messages)[0].content,
        "Sunny in Paris (checked)"
    );
}

#[derive(Deserialize, JsonSchema)]
struct Empty {}

#[tokio::test]
async fn tool_error_recovers_with_a_result_the_model_sees_as_success() {
    let model = ScriptedModel::new()
        .tool_call("broken", json!({}))
        .text("ok");
    let broken = tool(
        "broken",
        "Always fails",
        |_: Empty, _ctx: ToolCtx| async move { Err::<String, _>(ToolFailure::new("connection reset")) },
    );
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(broken)
        .tool_failed(|mut ev, _ctx| async move {
            ev.recover(format!("cached value (after: {})", ev.error()));
            Ok(ev)
        })
        .build()
        .unwrap();

    Runtime::new().run(&agent, "go").await.unwrap();

    let sent = result_sent(&model, 1);
    assert!(!sent.is_error);
    assert_eq!(sent.content, "cached value (after: connection reset)");
}

// ---------------------------------------------------------------- BeforeStep / AfterStep

#[tokio::test]
async fn before_step_skip_makes_no_model_call_but_the_step_counts() {
    let log = new_log();
    let model = ScriptedModel::new().text("done");
    let agent =
        Agent::builder("a")
            .model(model.clone())
            // Registered first: a decision ends the chain, so hooks after the skipping one do not
            // see the event.
            .with(Recorder::new(&log).events(
                Events::BEFORE_STEP | Events::AFTER_STEP | Events::BEFORE_MODEL | Events::STOP,
            ))
            .before_step(|mut ev, _ctx| async move {
                if ev.step() == 1 {
                    ev.skip();
                }
                Ok(ev)
            })
            .build()
            .unwrap();

    let out = Runtime::new().run(&agent, "go").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("done"));
    assert_eq!(out.steps, 2);
    assert_eq!(model.calls(), 1);
    assert_eq!(
        entries(&log),
        [
            "BeforeStep:1",
            "AfterStep:1",
            "BeforeStep:2",
            "BeforeModel",
            "AfterStep:2",
            "Stop:FinalAnswer",
        ]
    );
}

#[tokio::test]
async fn skipped_steps_count_toward_the_step_limit() {
    let model = ScriptedModel::new().text("never");
    let agent = Agent::builder("a")
        .model(model.clone())
        .max_steps(3)
        .before_step(|mut ev, _ctx| async move {
            ev.skip();
            Ok(ev)
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "go").await.unwrap();

    assert_eq!(out.stop, StopReason::MaxSteps { limit: 3 });
    assert_eq!(out.steps, 3);
    assert_eq!(out.output, None);
    assert_eq!(model.calls(), 0);
}

#[tokio::test]
async fn before_step_stop_ends_the_run_naming_the_hook_and_cannot_be_vetoed() {
    let (log, calls) = (new_log(), Counter::default());
    let model = paris_then("never");
    let stops = new_log();
    let stops_seen = stops.clone();
    let agent = weather_agent(&model, &log, &calls)
        .with(
            on::before_step(|mut ev, _ctx| async move {
                if ev.step() == 2 {
                    ev.stop("budget exhausted");
                }
                Ok(ev)
            })
            .named("budget"),
        )
        .stop(move |mut ev, _ctx| {
            ev.veto("keep going");
            push(
                &stops_seen,
                format!("{} vetoed={:?}", ev.reason(), ev.vetoed()),
            );
            async move { Ok(ev) }
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(
        out.stop,
        StopReason::Hook {
            hook: "budget".into(),
            reason: "budget exhausted".into()
        }
    );
    assert_eq!(out.output, None);
    assert_eq!(model.calls(), 1);
    assert_eq!(calls.get(), 1);
    assert_eq!(out.steps, 1, "the stopped step did not happen");
    assert_eq!(
        entries(&stops),
        ["stopped by hook `budget`: budget exhausted vetoed=None"]
    );
}

#[tokio::test]
async fn after_step_stop_ends_the_run_after_that_step() {
    let (log, calls) = (new_log(), Counter::default());
    let model = paris_then("never");
    let agent = weather_agent(&model, &log, &calls)
        .with(
            on::after_step(|mut ev, _ctx| async move {
                if ev.model_calls() >= 1 {
                    ev.stop("one model call is enough");
                }
                Ok(ev)
            })
            .named("limiter"),
        )
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(
        out.stop,
        StopReason::Hook {
            hook: "limiter".into(),
            reason: "one model call is enough".into()
        }
    );
    assert_eq!(out.output, None);
    assert_eq!(out.steps, 1);
    assert_eq!(model.calls(), 1);
    assert_eq!(calls.get(), 1, "the step's tool call completed");
    assert_eq!(
        out.messages.len(),
        3,
        "user, assistant tool call, tool result"
    );
}

// ---------------------------------------------------------------- Stop

#[tokio::test]
async fn stop_veto_continues_the_run_with_the_message_and_the_next_final_answer_ends_it() {
    let log = new_log();
    let vetoes = Counter::default();
    let model = ScriptedModel::new()
        .text("first answer")
        .text("second answer");
    let v = vetoes.clone();
    let agent = Agent::builder("a")
        .model(model.clone())
        .with(Recorder::new(&log).events(Events::MESSAGE_ADDED | Events::STOP))
        .stop(move |mut ev, _ctx| {
            if *ev.reason() == StopReason::FinalAnswer && v.bump() == 1 {
                ev.veto("Double-check the dates.");
            }
            async move { Ok(ev) }
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Plan it").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("second answer"));
    assert_eq!(out.stop, StopReason::FinalAnswer);
    assert_eq!(out.steps, 2);
    assert_eq!(model.calls(), 2);
    assert_eq!(vetoes.get(), 2);
    let last = model.requests()[1].messages.last().unwrap().clone();
    assert_eq!(last, Message::user("Double-check the dates."));
    assert_eq!(
        entries(&log),
        [
            "MessageAdded:user",
            "MessageAdded:assistant",
            "Stop:FinalAnswer",
            "MessageAdded:user",
            "MessageAdded:assistant",
            "Stop:FinalAnswer",
        ]
    );
}

#[tokio::test]
async fn stop_veto_is_ignored_for_the_step_limit() {
    let (log, calls) = (new_log(), Counter::default());
    let model = paris_then("never");
    let seen = new_log();
    let s = seen.clone();
    let agent = weather_agent(&model, &log, &calls)
        .max_steps(1)
        .stop(move |mut ev, _ctx| {
            ev.veto("keep going");
            push(&s, format!("{:?} vetoed={:?}", ev.reason(), ev.vetoed()));
            async move { Ok(ev) }
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(out.stop, StopReason::MaxSteps { limit: 1 });
    assert_eq!(out.output, None);
    assert_eq!(model.calls(), 1);
    assert_eq!(entries(&seen), ["MaxSteps { limit: 1 } vetoed=None"]);
}

// ---------------------------------------------------------------- BeforeModel / AfterModel

#[tokio::test]
async fn before_model_answers_without_calling_the_model() {
    let log = new_log();
    let model = ScriptedModel::new().text("from the model");
    let agent = Agent::builder("a")
        .model(model.clone())
        .with(
            on::before_model(|mut ev, _ctx| async move {
                if ev.request.messages.len() == 1 {
                    ev.respond(ModelResponse::text("from the hook"));
                }
                Ok(ev)
            })
            .named("answer-cache"),
        )
        .with(
            Recorder::new(&log)
                .events(Events::BEFORE_MODEL | Events::TEXT_DELTA | Events::AFTER_MODEL),
        )
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Hi").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("from the hook"));
    assert_eq!(model.calls(), 0);
    assert_eq!(model.remaining(), 1);
    assert_eq!(out.model_calls, 1, "a hook's answer counts as a model turn");
    // The recorder after the answering hook still sees BeforeModel (read-only), and AfterModel
    // sees the answer; nothing was streamed.
    assert_eq!(entries(&log), ["BeforeModel", "AfterModel"]);
}

#[tokio::test]
async fn before_model_can_answer_with_tool_calls() {
    let (log, calls) = (new_log(), Counter::default());
    let model = ScriptedModel::new().text("Sunny it is.");
    let agent = weather_agent(&model, &log, &calls)
        .before_model(|mut ev, _ctx| async move {
            if ev.request.messages.len() == 1 {
                let call = ToolCall::new("hook_call", "get_weather", &json!({"city": "Lima"}));
                ev.respond(ModelResponse::tool_calls(vec![call]));
            }
            Ok(ev)
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Lima?").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("Sunny it is."));
    assert_eq!(model.calls(), 1);
    assert_eq!(entries(&log), ["tool:Lima"]);
    assert_eq!(result_sent(&model, 0).call_id, "hook_call");
}

#[tokio::test]
async fn before_model_rewrites_the_request() {
    let model = ScriptedModel::new().text("ok");
    let agent = Agent::builder("a")
        .instructions("original prompt")
        .model(model.clone())
        .before_model(|mut ev, _ctx| async move {
            ev.request.system = Some(format!("{} + policy", ev.request.system.unwrap()).into());
            ev.request.messages.push(Message::user("extra context"));
            ev.request.params.temperature = Some(0.0);
            Ok(ev)
        })
        .build()
        .unwrap();

    Runtime::new().run(&agent, "Hi").await.unwrap();

    let req = &model.requests()[0];
    assert_eq!(req.system.as_deref(), Some("original prompt + policy"));
    assert_eq!(
        req.messages.to_vec(),
        [Message::user("Hi"), Message::user("extra context")]
    );
    assert_eq!(req.params.temperature, Some(0.0));
}

#[tokio::test]
async fn after_model_retry_sends_feedback_as_a_user_message() {
    let model = ScriptedModel::new()
        .text("rude answer")
        .text("polite answer");
    let agent = Agent::builder("a")
        .model(model.clone())
        .after_model(|mut ev, _ctx| async move {
            if ev.response.text.contains("rude") {
                ev.retry("Be polite.");
            }
            Ok(ev)
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Hi").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("polite answer"));
    assert_eq!(model.calls(), 2);
    assert_eq!(out.steps, 1, "a retry stays within the step");
    assert_eq!(
        model.requests()[1].messages.to_vec(),
        [
            Message::user("Hi"),
            Message::assistant("rude answer"),
            Message::user("Be polite."),
        ]
    );
}

#[tokio::test]
async fn after_model_retries_are_bounded_by_max_model_retries() {
    let model = ScriptedModel::new().text("a").text("b").text("c").text("d");
    let agent = Agent::builder("stubborn")
        .model(model.clone())
        .max_model_retries(2)
        .after_model(|mut ev, _ctx| async move {
            ev.retry("again");
            Ok(ev)
        })
        .build()
        .unwrap();

    let err = Runtime::new().run(&agent, "Hi").await.unwrap_err();

    match err {
        Error::TooManyRetries { agent, step, limit } => {
            assert_eq!((agent.as_str(), step, limit), ("stubborn", 1, 2));
        }
        other => panic!("expected TooManyRetries, got {other:?}"),
    }
    assert_eq!(model.calls(), 3, "the first call plus two retries");
}

#[tokio::test]
async fn after_model_rewrites_the_response_text() {
    let model = ScriptedModel::new().text("my password is hunter2");
    let agent = Agent::builder("a")
        .model(model.clone())
        .after_model(|mut ev, _ctx| async move {
            ev.response.text = ev.response.text.replace("hunter2", "[redacted]");
            Ok(ev)
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Hi").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("my password is [redacted]"));
    assert_eq!(
        out.messages.last().unwrap(),
        &Message::assistant("my password is [redacted]")
    );
}

// ---------------------------------------------------------------- RunStart / RunFailed

#[tokio::test]
async fn run_start_rewrites_the_input() {
    let model = ScriptedModel::new().text("ok");
    let agent = Agent::builder("a")
        .model(model.clone())
        .run_start(|mut ev, _ctx| async move {
            ev.input = format!("[tenant acme] {}", ev.input);
            Ok(ev)
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Hi").await.unwrap();

    assert_eq!(
        model.requests()[0].messages.to_vec(),
        [Message::user("[tenant acme] Hi")]
    );
    assert_eq!(out.messages.first().unwrap().text(), "[tenant acme] Hi");
}

#[tokio::test]
async fn run_error_recovers_the_run_with_an_output() {
    let ends = new_log();
    let e = ends.clone();
    let model = ScriptedModel::new().error(ModelErrorKind::Server, "upstream down");
    let agent = Agent::builder("a")
        .model(model.clone())
        .with(
            on::run_failed(|mut ev, _ctx| async move {
                assert!(matches!(**ev.error(), Error::Model(_)), "{:?}", ev.error());
                ev.recover("fallback answer");
                Ok(ev)
            })
            .named("fallback"),
        )
        .run_end(move |ev, _ctx| {
            push(&e, format!("{:?} {:?}", ev.stop(), ev.output()));
            async move { Ok(ev) }
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Hi").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("fallback answer"));
    match &out.stop {
        StopReason::Recovered { hook, error } => {
            assert_eq!(hook, "fallback");
            assert!(error.contains("upstream down"), "{error}");
        }
        other => panic!("expected Recovered, got {other:?}"),
    }
    let ends = entries(&ends);
    assert_eq!(ends.len(), 1, "RunEnd fires once after a recovery");
    assert!(ends[0].starts_with("Recovered"), "{ends:?}");
}

// ---------------------------------------------------------------- TextDelta

#[tokio::test]
async fn text_delta_abort_stops_the_run_as_aborted() {
    let deltas = new_log();
    let d = deltas.clone();
    let turn = ScriptedTurn::new().with_text_deltas(["Hel", "lo ", "SECRET", " more"]);
    let model = ScriptedModel::new().turn(turn).text("never played");
    let agent = Agent::builder("a")
        .model(model.clone())
        .with(
            on::text_delta(move |mut ev, _ctx| {
                push(&d, ev.text.clone());
                if ev.text.contains("SECRET") {
                    ev.abort("leaked a secret");
                }
                async move { Ok(ev) }
            })
            .named("dlp"),
        )
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Hi").await.unwrap();

    assert_eq!(
        out.stop,
        StopReason::Aborted {
            reason: "leaked a secret".into()
        }
    );
    assert_eq!(out.output, None);
    assert_eq!(model.calls(), 1);
    assert_eq!(entries(&deltas), ["Hel", "lo ", "SECRET"]);
}

// ---------------------------------------------------------------- around middleware

#[tokio::test]
async fn around_model_middleware_answers_from_a_cache_and_times_the_call() {
    let log = new_log();
    let timings: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let cache: Arc<Mutex<HashMap<String, ModelResponse>>> = Arc::default();
    let model = ScriptedModel::new().text("Paris is the capital.");
    let (l1, l2, t) = (log.clone(), log.clone(), timings.clone());
    let agent = Agent::builder("a")
        .model(model.clone())
        // registered first: outermost
        .around_model(move |req, next| {
            let (log, timings) = (l1.clone(), t.clone());
            async move {
                push(&log, "timing:start");
                let t0 = Instant::now();
                let out = next.run(req).await;
                timings.lock().unwrap().push(t0.elapsed());
                push(&log, "timing:end");
                out
            }
        })
        .around_model(move |req, next| {
            let (log, cache) = (l2.clone(), cache.clone());
            async move {
                let key = req.messages.last().unwrap().text().to_string();
                let hit = cache.lock().unwrap().get(&key).cloned();
                if let Some(response) = hit {
                    push(&log, "cache:hit");
                    return Ok(response);
                }
                push(&log, "cache:miss");
                let response = next.run(req).await?;
                tokio::time::sleep(Duration::from_millis(20)).await; // a slow store
                cache.lock().unwrap().insert(key, response.clone());
                Ok(response)
            }
        })
        .build()
        .unwrap();
    let runtime = Runtime::new();

    let first = runtime.run(&agent, "Capital of France?").await.unwrap();
    let second = runtime.run(&agent, "Capital of France?").await.unwrap();

    assert_eq!(first.output.as_deref(), Some("Paris is the capital."));
    assert_eq!(second.output.as_deref(), Some("Paris is the capital."));
    assert_eq!(model.calls(), 1, "the second answer came from the cache");
    assert_eq!(
        entries(&log),
        [
            "timing:start",
            "cache:miss",
            "timing:end",
            "timing:start",
            "cache:hit",
            "timing:end",
        ]
    );
    let timings = timings.lock().unwrap().clone();
    assert_eq!(timings.len(), 2);
    assert!(
        timings[0] >= Duration::from_millis(20),
        "the timing middleware wraps the cache: {timings:?}"
    );
}

#[tokio::test]
async fn around_tool_middleware_wraps_the_tool_body() {
    let (log, calls) = (new_log(), Counter::default());
    let model = paris_then("ok");
    let l = log.clone();
    let agent = weather_agent(&model, &log, &calls)
        .around_tool(move |call, next| {
            let log = l.clone();
            async move {
                push(&log, format!("mw:start {} {}", call.name(), call.input));
                let out = next.run(call).await;
                push(
                    &log,
                    format!("mw:end {:?}", out.as_ref().map(|o| o.content.clone())),
                );
                out
            }
        })
        .build()
        .unwrap();

    Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(
        entries(&log),
        [
            r#"mw:start get_weather {"city":"Paris"}"#,
            "tool:Paris",
            r#"mw:end Ok("Sunny in Paris")"#,
        ]
    );
}

#[tokio::test]
async fn around_tool_middleware_retries_a_flaky_tool() {
    // `Next::run` takes `self` and `Next` is not `Clone`, so a middleware cannot call the rest of
    // the chain a second time. The only way to retry is to keep a handle on the tool and call it
    // directly, bypassing any inner middleware. See the report: the middleware docs promise
    // "retry".
    let attempts = Counter::default();
    let a = attempts.clone();
    let flaky: Arc<dyn Tool> = Arc::new(tool(
        "flaky",
        "Fails twice, then works",
        move |_: Empty, _ctx: ToolCtx| {
            let n = a.bump();
            async move {
                if n < 3 {
                    Err(ToolFailure::new(format!("transient failure #{n}")))
                } else {
                    Ok(format!("worked on attempt {n}"))
                }
            }
        },
    ));
    let model = ScriptedModel::new()
        .tool_call("flaky", json!({}))
        .text("ok");
    let retried = flaky.clone();
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool_arc(flaky)
        .around_tool(move |call, next| {
            let tool = retried.clone();
            async move {
                let run = next.ctx().clone();
                let mut outcome = next.run(call.clone()).await;
                let mut tries = 1;
                while outcome.is_err() && tries < 5 {
                    tries += 1;
                    let ctx = ToolCtx::new(
                        run.clone(),
                        Arc::from(call.call_id()),
                        Arc::from(call.name()),
                    );
                    outcome = tool.call(call.input.clone(), ctx).await;
                }
                outcome
            }
        })
        .build()
        .unwrap();

    Runtime::new().run(&agent, "go").await.unwrap();

    assert_eq!(attempts.get(), 3);
    let sent = result_sent(&model, 1);
    assert!(!sent.is_error);
    assert_eq!(sent.content, "worked on attempt 3");
}
