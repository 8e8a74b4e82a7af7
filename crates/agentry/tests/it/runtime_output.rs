//! Structured output through the in-process runtime: typed answers, answers sent back with the
//! validation error, fenced JSON, and the retry limit.

use agentry::Message;
use agentry::prelude::*;

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Forecast {
    city: String,
    celsius: i32,
}

const PARIS: &str = r#"{"city": "Paris", "celsius": 21}"#;

fn paris() -> Forecast {
    Forecast {
        city: "Paris".into(),
        celsius: 21,
    }
}

fn forecaster(model: &ScriptedModel, retries: Option<u32>) -> Agent<(), Forecast> {
    let b = Agent::builder("forecaster")
        .instructions("Answer with JSON.")
        .model(model.clone())
        .output::<Forecast>();
    let b = match retries {
        Some(n) => b.output_retries(n),
        None => b,
    };
    b.build().unwrap()
}

/// The text of the last message of model request `i`, which must be a user message.
fn last_user_text(model: &ScriptedModel, i: usize) -> String {
    let req = &model.requests()[i];
    let last = req.messages.last().unwrap();
    assert!(
        matches!(last, Message::User { .. }),
        "request {i} should end with a user message: {last:?}"
    );
    last.text().to_string()
}

#[tokio::test]
async fn a_valid_answer_is_typed_and_the_schema_is_sent() {
    let model = ScriptedModel::new().text(PARIS);
    let out = Runtime::new()
        .run(&forecaster(&model, None), "Weather in Paris?")
        .await
        .unwrap();
    assert_eq!(out.output, Some(paris()));
    assert_eq!(out.stop, StopReason::FinalAnswer);
    assert_eq!(out.text, PARIS);
    let req = &model.requests()[0];
    let schema = req
        .output_schema
        .as_ref()
        .expect("the request carries the output schema");
    assert!(schema["properties"]["celsius"].is_object(), "{schema}");
    assert!(schema["properties"]["city"].is_object(), "{schema}");
}

#[tokio::test]
async fn an_answer_that_is_not_json_is_sent_back_then_the_valid_one_is_accepted() {
    let model = ScriptedModel::new().text("It is sunny!").text(PARIS);
    let out = Runtime::new()
        .run(&forecaster(&model, None), "Weather in Paris?")
        .await
        .unwrap();
    assert_eq!(out.output, Some(paris()));
    assert_eq!(out.stop, StopReason::FinalAnswer);
    assert_eq!(out.model_calls, 2);
    let feedback = last_user_text(&model, 1);
    assert!(feedback.contains("not valid JSON"), "{feedback}");
    assert!(
        feedback.contains("celsius"),
        "the schema is repeated: {feedback}"
    );
    // The history keeps the invalid answer and the feedback.
    let texts: Vec<String> = out.messages.iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(texts[0], "Weather in Paris?");
    assert_eq!(texts[1], "It is sunny!");
    assert_eq!(texts[2], feedback);
    assert_eq!(texts[3], PARIS);
    assert_eq!(out.messages.len(), 4);
}

#[tokio::test]
async fn an_answer_that_breaks_the_schema_is_sent_back_with_the_path() {
    let model = ScriptedModel::new()
        .text(r#"{"city": "Paris", "celsius": "warm"}"#)
        .text(PARIS);
    let out = Runtime::new()
        .run(&forecaster(&model, None), "Weather in Paris?")
        .await
        .unwrap();
    assert_eq!(out.output, Some(paris()));
    let feedback = last_user_text(&model, 1);
    assert!(
        feedback.contains("does not match the required schema"),
        "{feedback}"
    );
    assert!(feedback.contains("/celsius"), "{feedback}");
}

#[tokio::test]
async fn a_missing_field_is_sent_back() {
    let model = ScriptedModel::new()
        .text(r#"{"city": "Paris"}"#)
        .text(PARIS);
    let out = Runtime::new()
        .run(&forecaster(&model, None), "Weather in Paris?")
        .await
        .unwrap();
    assert_eq!(out.output, Some(paris()));
    let feedback = last_user_text(&model, 1);
    assert!(feedback.contains("celsius"), "{feedback}");
    assert!(feedback.contains("required"), "{feedback}");
}

#[tokio::test]
async fn fenced_json_answers_are_accepted() {
    for answer in [
        format!("```json\n{PARIS}\n```"),
        format!("```\n{PARIS}\n```"),
        format!("  \n```json\n{PARIS}\n```\n"),
    ] {
        let model = ScriptedModel::new().text(answer.clone());
        let out = Runtime::new()
            .run(&forecaster(&model, None), "Weather in Paris?")
            .await
            .unwrap_or_else(|e| panic!("{answer:?} was rejected: {e}"));
        assert_eq!(out.output, Some(paris()), "{answer:?}");
        assert_eq!(out.model_calls, 1, "{answer:?} was accepted at once");
    }
}

#[tokio::test]
async fn the_run_fails_after_output_retries_invalid_answers() {
    for retries in [0u32, 2] {
        let mut model = ScriptedModel::new();
        for i in 0..=retries {
            model = model.text(format!("no JSON, attempt {i}"));
        }
        // A valid answer the run must never get to.
        let model = model.text(PARIS);
        let err = Runtime::new()
            .run(&forecaster(&model, Some(retries)), "Weather in Paris?")
            .await
            .expect_err("the run must fail");
        match &err {
            Error::InvalidOutput {
                agent,
                attempts,
                error,
            } => {
                assert_eq!(agent, "forecaster");
                assert_eq!(*attempts, retries + 1);
                assert!(error.contains("not valid JSON"), "{error}");
            }
            other => panic!("expected InvalidOutput, got {other:?}"),
        }
        assert!(err.to_string().contains("output_retries"), "{err}");
        assert_eq!(model.calls(), retries + 1);
        assert_eq!(model.remaining(), 1, "the valid answer was never asked for");
    }
}

#[tokio::test]
async fn the_default_allows_three_retries() {
    let model = ScriptedModel::new()
        .text("a")
        .text("b")
        .text("c")
        .text(PARIS);
    let out = Runtime::new()
        .run(&forecaster(&model, None), "Weather in Paris?")
        .await
        .unwrap();
    assert_eq!(out.output, Some(paris()));
    assert_eq!(out.model_calls, 4);
}

#[tokio::test]
async fn structured_output_after_tool_calls() {
    #[derive(Deserialize, JsonSchema)]
    struct City {
        city: String,
    }
    let temp = tool("temp", "Temperature", |a: City, _ctx: ToolCtx| async move {
        Ok(format!("{}: 21", a.city))
    });
    let model = ScriptedModel::new()
        .tool_call("temp", json!({"city": "Paris"}))
        .text("not yet json")
        .text(format!("```json\n{PARIS}\n```"));
    let agent = Agent::builder("forecaster")
        .model(model.clone())
        .tool(temp)
        .output::<Forecast>()
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();
    assert_eq!(out.output, Some(paris()));
    assert_eq!(out.steps, 3);
    assert_eq!(
        model.requests()[1]
            .messages
            .last()
            .unwrap()
            .tool_result_text()
            .as_deref(),
        Some("Paris: 21")
    );
    assert!(last_user_text(&model, 2).contains("not valid JSON"));
}

#[tokio::test]
async fn a_started_run_that_fails_its_output_ends_its_stream_with_run_failed() {
    let model = ScriptedModel::new().text("nope").text("still nope");
    let agent = forecaster(&model, Some(1));
    let mut handle = Runtime::new().run(&agent, "Weather?").start();
    let events: Vec<RunEvent> = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        handle.events().collect::<Vec<_>>(),
    )
    .await
    .expect("the stream did not end");
    let err = handle.result().await.unwrap_err();
    assert!(
        matches!(err, Error::InvalidOutput { attempts: 2, .. }),
        "{err:?}"
    );
    match events.last() {
        Some(RunEvent::RunFailed { error, .. }) => {
            assert!(error.contains("output schema"), "{error}");
        }
        other => panic!("the stream should end with RunFailed, got {other:?}"),
    }
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, RunEvent::RunFinished { .. }))
    );
}
