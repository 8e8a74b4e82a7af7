//! Around middleware: caches, timers and retries around model and tool calls.

use super::*;
use agentry::{ModelResponse, Tool, ToolFailure};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
