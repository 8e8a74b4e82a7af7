//! BeforeModel, AfterModel, RunStart, RunFailed and TextDelta decisions: answer, rewrite, retry, recover, abort.

use super::*;
use agentry::hooks::*;
use agentry::{Message, ModelResponse, ScriptedTurn};
use agentry::{ModelErrorKind, ToolCall};

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
            ev.input = format!("[tenant acme] {}", ev.input).into();
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
