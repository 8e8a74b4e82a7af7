//! The finish gate in real runs: a rejected answer goes back to the model with the gate's
//! message, an accepted one ends the run, and after its bound the gate gives up.

use agentry::Role;
use agentry::ScriptedTurn;
use agentry::builtins::FinishGate;
use agentry::prelude::*;

fn gate() -> FinishGate {
    FinishGate::text(|answer| {
        if answer.contains("Sources:") {
            Ok(())
        } else {
            Err("Add a `Sources:` line.".into())
        }
    })
}

#[tokio::test]
async fn a_rejected_answer_goes_back_and_the_corrected_one_ends_the_run() {
    let model = ScriptedModel::new()
        .text("Paris is the capital.")
        .text("Paris is the capital.\nSources: atlas");
    let agent = Agent::builder("writer")
        .model(model.clone())
        .with(gate())
        .build()
        .unwrap();
    let out = Runtime::new()
        .run(&agent, "Capital of France?")
        .await
        .unwrap();
    assert_eq!(
        out.output.as_deref(),
        Some("Paris is the capital.\nSources: atlas")
    );
    assert_eq!(out.model_calls, 2);
    assert_eq!(out.stop, StopReason::FinalAnswer);
    let second = &model.requests()[1];
    assert_eq!(
        second.messages.last().unwrap().text(),
        "Add a `Sources:` line."
    );
}

#[tokio::test]
async fn the_gate_gives_up_at_its_bound_and_the_answer_stands() {
    let model = ScriptedModel::from_fn(|n, _| ScriptedTurn::new().with_text(format!("draft {n}")));
    let agent = Agent::builder("writer")
        .model(model)
        .with(gate().max_rejections(2))
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "Write.").await.unwrap();
    // Two rejections, then the third answer is let through.
    assert_eq!(out.model_calls, 3);
    assert_eq!(out.output.as_deref(), Some("draft 3"));
    let feedback = out
        .messages
        .iter()
        .filter(|m| m.role() == Role::User && m.text() == "Add a `Sources:` line.")
        .count();
    assert_eq!(feedback, 2);
    // A new run starts with a fresh count.
    let again = Runtime::new().run(&agent, "Write.").await.unwrap();
    assert_eq!(again.model_calls, 3);
}

#[tokio::test]
async fn a_structured_answer_is_checked_as_json() {
    #[derive(Deserialize, Serialize, JsonSchema)]
    struct Review {
        score: u8,
    }
    let model = ScriptedModel::new()
        .text(r#"{"score": 11}"#)
        .text(r#"{"score": 9}"#);
    let agent = Agent::builder("reviewer")
        .model(model)
        .output::<Review>()
        .with(FinishGate::new(|answer| match answer["score"].as_u64() {
            Some(s) if s <= 10 => Ok(()),
            _ => Err("The score goes from 0 to 10.".into()),
        }))
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "Review.").await.unwrap();
    assert_eq!(out.output.unwrap().score, 9);
    assert_eq!(out.model_calls, 2);
}
