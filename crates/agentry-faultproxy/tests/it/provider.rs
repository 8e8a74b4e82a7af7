//! A model provider behind the fault proxy: the OpenAI Chat Completions client against aimock,
//! through full agent runs with a tool, one fault at a time. What each run must end as comes
//! from the fault table (docs/src/faults.md) and the providers chapter (docs/src/providers.md):
//! 429, 5xx and connections that fail before anything was streamed are retried, honouring
//! `Retry-After`; a stream broken after output is not, and says what had arrived; a stream
//! that sends nothing fails at the model idle timeout, one that never ends at the model turn
//! timeout, each naming it.

use crate::support::aimock::Aimock;
use agentry::prelude::*;
use agentry::{ModelError, ModelErrorKind, OpenAi, RetryPolicy};
use agentry_faultproxy::{Fault, FaultProxy, Plan};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The weather tool's input.
#[derive(Deserialize, JsonSchema)]
struct City {
    /// The city.
    city: String,
}

/// The cities the weather tool was called for, in order.
type Calls = Arc<Mutex<Vec<String>>>;

/// Retries as the defaults make them, but with waits of milliseconds.
fn quick_retries() -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(4)
        .initial_backoff(Duration::from_millis(10))
        .max_backoff(Duration::from_millis(50))
}

/// An agent on the OpenAI client for `base` (the proxy), with a weather tool that records
/// its calls.
fn weather_agent(base: &str, calls: &Calls) -> Agent {
    let model = OpenAi::builder("test-model")
        .base_url(format!("{base}/v1"))
        .api_key("sk-test")
        .retry(quick_retries())
        .read_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let log = calls.clone();
    let weather = tool(
        "get_weather",
        "The weather in a city",
        move |a: City, _ctx: ToolCtx| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(a.city.clone());
                Ok(format!("sunny in {}", a.city))
            }
        },
    );
    Agent::builder("weather")
        .instructions("Answer weather questions with the tool.")
        .model(model)
        .tool(weather)
        .build()
        .unwrap()
}

/// How one run through the proxy went.
struct Outcome {
    result: Result<RunOutput<(), String>, Error>,
    elapsed: Duration,
    calls: Vec<String>,
    /// Faults the proxy injected.
    faults: Vec<Fault>,
    /// Connections the client opened to the proxy.
    connections: usize,
    /// Model requests that reached aimock.
    upstream: usize,
}

impl Outcome {
    /// The completed run, checked whole: the answer, one tool call for Lisbon, and its result
    /// in the history (nothing lost to the fault, nothing done twice).
    fn completed(&self, case: &str, answer: &str) -> &RunOutput<(), String> {
        let out = self
            .result
            .as_ref()
            .unwrap_or_else(|e| panic!("{case}: the run should complete: {e}"));
        assert_eq!(out.output.as_deref(), Some(answer), "{case}");
        assert_eq!(self.calls, ["Lisbon"], "{case}: the tool ran once");
        let results: Vec<_> = out
            .messages
            .iter()
            .filter_map(|m| m.tool_result())
            .collect();
        assert_eq!(results.len(), 1, "{case}: {results:?}");
        assert_eq!(results[0].name, "get_weather");
        assert!(!results[0].is_error, "{case}: {results:?}");
        assert_eq!(
            results[0].content,
            agentry::Content::from("sunny in Lisbon"),
            "{case}"
        );
        let asked: Vec<_> = out.messages.iter().flat_map(|m| m.tool_calls()).collect();
        assert_eq!(asked.len(), 1, "{case}: {asked:?}");
        assert_eq!(asked[0].id, results[0].call_id, "{case}");
        out
    }

    /// The model error the run failed with, naming the provider and model.
    fn model_error(&self, case: &str, kind: ModelErrorKind) -> &ModelError {
        match &self.result {
            Err(Error::Model(error)) => {
                println!("{case}: {error}");
                assert_eq!(error.model, "openai:test-model", "{case}: {error}");
                assert_eq!(error.kind, kind, "{case}: {error}");
                assert!(
                    self.calls.is_empty(),
                    "{case}: no tool ran: {:?}",
                    self.calls
                );
                error
            }
            other => panic!("{case}: expected a model error, got {other:?}"),
        }
    }
}

/// Runs the weather agent on `prompt` through a new proxy with `plan`.
async fn run(server: &Aimock, plan: Plan, prompt: &str, runtime: Runtime) -> Outcome {
    let proxy = FaultProxy::start(server.addr(), plan).await.unwrap();
    let before = server.requests().await;
    let calls = Calls::default();
    let agent = weather_agent(&proxy.url(), &calls);
    let started = Instant::now();
    let result = runtime.run(&agent, prompt).await;
    let elapsed = started.elapsed();
    let calls = calls.lock().unwrap().clone();
    Outcome {
        result,
        elapsed,
        calls,
        faults: proxy.faults(),
        connections: proxy.connections(),
        upstream: server.requests().await - before,
    }
}

/// The bytes of the first tool call's arguments where `"Lisbon"` begins: the stream is cut
/// there in the middle of the call.
const MID_CALL: &str = r#"\"Lis"#;

#[tokio::test]
async fn a_provider_behind_faults_ends_each_run_as_the_fault_table_says() {
    let Some(server) =
        Aimock::start("a_provider_behind_faults_ends_each_run_as_the_fault_table_says").await
    else {
        return;
    };
    let weather = "weather in Lisbon";
    let answer = "It is sunny in Lisbon.";

    // Healthy: the baseline the faults are measured against.
    let o = run(&server, Plan::pass(), weather, Runtime::new()).await;
    o.completed("pass", answer);
    assert_eq!((o.faults.len(), o.upstream), (0, 2));

    // A 429 storm with Retry-After, then the provider answers: retried after the waits asked
    // for (the client's own backoff would be at most 50 ms each), and the rate-limited
    // requests never reached the provider.
    let wait = Duration::from_millis(300);
    let o = run(
        &server,
        Plan::first_n(3, Fault::rate_limited(wait)),
        weather,
        Runtime::new(),
    )
    .await;
    o.completed("429 storm", answer);
    assert_eq!(o.faults, vec![Fault::rate_limited(wait); 3]);
    assert!(o.elapsed >= wait * 3, "429 storm: {:?}", o.elapsed);
    assert_eq!(o.upstream, 2, "429 storm: only the passing attempts arrive");

    // A storm that outlasts the retries: the run fails with the cause, the attempts counted.
    let o = run(
        &server,
        Plan::always(Fault::rate_limited(Duration::from_millis(20))),
        weather,
        Runtime::new(),
    )
    .await;
    let e = o.model_error("endless 429", ModelErrorKind::RateLimited);
    assert!(
        e.message.contains("HTTP 429") && e.message.contains("after 5 attempts"),
        "{e}"
    );
    assert_eq!((o.faults.len(), o.upstream), (5, 0));

    // 500s, then the provider answers: retried with backoff.
    let o = run(
        &server,
        Plan::first_n(2, Fault::status(500)),
        weather,
        Runtime::new(),
    )
    .await;
    o.completed("500s", answer);
    assert_eq!(o.faults, vec![Fault::status(500); 2]);
    assert_eq!(o.upstream, 2);

    // A provider that keeps failing: the run fails naming the status and the attempts.
    let o = run(
        &server,
        Plan::always(Fault::status(503)),
        weather,
        Runtime::new(),
    )
    .await;
    let e = o.model_error("endless 503", ModelErrorKind::Server);
    assert!(
        e.message.contains("HTTP 503") && e.message.contains("still failing after 5 attempts"),
        "{e}"
    );
    assert_eq!((o.faults.len(), o.upstream), (5, 0));

    // A slow first byte, shorter than the idle timeout: only slower.
    let slow = Duration::from_millis(400);
    let o = run(
        &server,
        Plan::first([Fault::SlowFirstByte(slow)]),
        weather,
        Runtime::new().model_idle_timeout(Duration::from_secs(2)),
    )
    .await;
    o.completed("slow first byte", answer);
    assert_eq!(o.faults, [Fault::SlowFirstByte(slow)]);
    assert!(o.elapsed >= slow, "{:?}", o.elapsed);
    assert_eq!(o.upstream, 2, "slow first byte: not retried");

    // The stream cut in the middle of a tool call's arguments, after text was streamed: not
    // retried (the text was seen), no tool runs on half its arguments, and the error says
    // what had arrived and how it broke.
    let o = run(
        &server,
        Plan::always(Fault::cut_after(MID_CALL)),
        weather,
        Runtime::new(),
    )
    .await;
    let e = o.model_error("cut mid call", ModelErrorKind::Stream);
    for says in [
        "21 characters of text",
        "1 unfinished tool call(s) (`get_weather` with 8 bytes of arguments)",
        "the connection broke",
        "not retried, since that output was already streamed",
    ] {
        assert!(e.message.contains(says), "cut mid call: `{says}` in: {e}");
    }
    assert_eq!(o.faults, [Fault::cut_after(MID_CALL)]);
    assert_eq!(
        (o.connections, o.upstream),
        (1, 1),
        "cut mid call: no retry"
    );

    // The same cut when the turn is only the tool call: nothing was streamed yet (a call is
    // given out whole), so the request is sent again and the run completes.
    let o = run(
        &server,
        Plan::first([Fault::cut_after(MID_CALL)]),
        "only the call",
        Runtime::new(),
    )
    .await;
    o.completed("cut before output", "Sunny, as the tool said.");
    assert_eq!(o.faults, [Fault::cut_after(MID_CALL)]);
    assert_eq!(
        o.upstream, 3,
        "cut before output: the cut turn was sent again"
    );

    // A provider that reads the request and never answers: the model idle timeout ends the
    // turn, naming itself.
    let idle = Duration::from_millis(700);
    let o = run(
        &server,
        Plan::always(Fault::Stall),
        weather,
        Runtime::new().model_idle_timeout(idle),
    )
    .await;
    let e = o.model_error("stall", ModelErrorKind::Timeout);
    assert!(e.message.contains("the model idle timeout"), "{e}");
    assert!(
        o.elapsed >= idle && o.elapsed < Duration::from_secs(5),
        "stall: {:?}",
        o.elapsed
    );
    assert_eq!((o.faults, o.connections), (vec![Fault::Stall], 1));

    // A stream that stalls after its first text, with a generous idle timeout: the model turn
    // timeout ends it, naming itself.
    let turn = Duration::from_secs(1);
    let o = run(
        &server,
        Plan::always(Fault::stall_after(r#""content":"Chec"#)),
        weather,
        Runtime::new()
            .model_idle_timeout(Duration::from_secs(30))
            .model_turn_timeout(turn),
    )
    .await;
    let e = o.model_error("stall mid stream", ModelErrorKind::Timeout);
    assert!(e.message.contains("the model turn timeout"), "{e}");
    assert!(
        o.elapsed >= turn && o.elapsed < Duration::from_secs(5),
        "stall mid stream: {:?}",
        o.elapsed
    );
    assert_eq!(o.faults.len(), 1);

    // Garbage in place of an HTTP answer, once: the connection failed before anything was
    // streamed, so it is retried.
    let o = run(
        &server,
        Plan::first([Fault::Garbage(256)]),
        weather,
        Runtime::new(),
    )
    .await;
    o.completed("garbage once", answer);
    assert_eq!(o.faults, [Fault::Garbage(256)]);

    // Garbage every time: the run fails once the retries are spent, saying the answer was not
    // HTTP and how many attempts were made.
    let o = run(
        &server,
        Plan::always(Fault::Garbage(256)),
        weather,
        Runtime::new(),
    )
    .await;
    let e = o.model_error("garbage", ModelErrorKind::Stream);
    for says in ["no response could be read", "5 attempt(s)", "invalid HTTP"] {
        assert!(e.message.contains(says), "garbage: `{says}` in: {e}");
    }
    assert_eq!((o.faults.len(), o.upstream), (5, 0));

    // A connection reset after the request: retried, and the run completes.
    let o = run(
        &server,
        Plan::first([Fault::Reset]),
        weather,
        Runtime::new(),
    )
    .await;
    o.completed("reset", answer);
    assert_eq!(o.faults, [Fault::Reset]);
    assert_eq!(
        o.upstream, 2,
        "reset: the reset request never reached the provider"
    );

    // A reset in the middle of the tool call, after text: not retried, the error says so.
    let o = run(
        &server,
        Plan::always(Fault::reset_after(MID_CALL)),
        weather,
        Runtime::new(),
    )
    .await;
    let e = o.model_error("reset mid call", ModelErrorKind::Stream);
    assert!(
        e.message.contains("the connection broke")
            && e.message.contains("unfinished tool call(s) (`get_weather`")
            && e.message.contains("not retried"),
        "{e}"
    );
    assert_eq!((o.connections, o.upstream), (1, 1));
}
