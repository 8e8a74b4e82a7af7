//! Context compaction in real runs: older messages are summarised by a model call or dropped,
//! tool calls stay with their results, the system prompt and the latest turns stay verbatim, and
//! the context events fire in order and steer it.

use agentry::Role;
use agentry::agent::CompactStrategy;
use agentry::builtins::Recorder;
use agentry::prelude::*;
use agentry::{
    History, Message, ModelErrorKind, ScriptedTurn, Tool,
    agent::{Compaction, OnCompactError},
    hooks::EventKind,
};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

#[derive(Deserialize, JsonSchema)]
struct Query {
    q: String,
}

const INSTRUCTIONS: &str = "You research things.";

/// A model that looks something up four times, then answers.
fn researcher() -> ScriptedModel {
    ScriptedModel::from_fn(|n, _| {
        if n <= 4 {
            ScriptedTurn::tool_call("lookup", json!({"q": format!("topic {n}")}))
        } else {
            ScriptedTurn::text("All done.")
        }
    })
    .named("researcher")
    .record_requests(true)
}

fn agent(model: ScriptedModel, compaction: Compaction, recorder: &Recorder) -> Agent {
    let lookup = tool(
        "lookup",
        "Looks a topic up.",
        |a: Query, _ctx: ToolCtx| async move { Ok(format!("{}: {}", a.q, "lorem ipsum ".repeat(40))) },
    );
    Agent::builder("researcher")
        .instructions(INSTRUCTIONS)
        .model(model)
        .tool(lookup)
        .compaction(compaction)
        .with(recorder.clone())
        .build()
        .unwrap()
}

/// A lookup whose every result is long (800 bytes), so a few steps pass the thresholds.
fn long_lookup() -> impl Tool {
    tool("lookup", "Looks up.", |_a: Query, _c: ToolCtx| async {
        Ok("x".repeat(800))
    })
}

/// Every tool result in `messages` follows the assistant turn that made its call.
fn assert_pairs_intact(messages: &History) {
    let mut calls = HashSet::new();
    for m in messages.iter() {
        match m {
            Message::Assistant { tool_calls, .. } => {
                calls.extend(tool_calls.iter().map(|c| c.id.clone()));
            }
            Message::Tool(r) => assert!(
                calls.contains(&r.call_id),
                "result {} has no call before it in {messages:#?}",
                r.call_id
            ),
            _ => {}
        }
    }
}

fn summaries(messages: &History) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.role() == Role::User && m.text().starts_with(agentry::agent::SUMMARY_HEADING))
        .map(|m| m.text().to_string())
        .collect()
}

#[tokio::test]
async fn older_messages_are_summarised_by_a_model_call_and_pairs_stay_intact() {
    let summarizer = ScriptedModel::from_fn(|n, _| {
        ScriptedTurn::text(format!("summary {n}")).with_usage(100, 10)
    })
    .record_requests(true);
    let model = researcher();
    let recorder = Recorder::new();
    let compaction = Compaction::summarize(300)
        .keep_recent(2)
        .summarizer(summarizer.clone());
    let out = Runtime::new()
        .run(&agent(model.clone(), compaction, &recorder), "Research.")
        .await
        .unwrap();
    assert_eq!(out.output.as_deref(), Some("All done."));

    // Compaction happened, and each time the prompt had passed the threshold.
    let before = recorder.of(EventKind::BeforeCompact);
    assert!(!before.is_empty(), "no compaction: {:?}", recorder.kinds());
    for ev in &before {
        assert!(ev.detail["tokens"].as_u64().unwrap() > 300, "{ev:?}");
        assert_eq!(ev.detail["strategy"], "summarize");
    }
    // The summariser read a transcript of the folded messages, with its own instructions.
    let first = &summarizer.requests()[0];
    assert_eq!(
        first.system.as_deref(),
        Some(agentry::agent::DEFAULT_SUMMARY_INSTRUCTIONS)
    );
    let transcript = first.messages[0].text();
    assert!(transcript.contains("[user] Research."), "{transcript}");
    assert!(
        transcript.contains("[assistant calls lookup]"),
        "{transcript}"
    );
    assert!(
        transcript.contains("[lookup result] topic 1"),
        "{transcript}"
    );
    // Its usage counts towards the run's.
    assert!(out.usage.input_tokens >= 100 * summarizer.calls() as u64);

    // The history holds the summary, every call still has its results, the latest turns are
    // verbatim, and every request kept the system prompt.
    assert_eq!(summaries(&out.messages).len(), 1, "{:#?}", out.messages);
    assert!(summaries(&out.messages)[0].ends_with(&format!("summary {}", summarizer.calls())));
    assert_pairs_intact(&out.messages);
    for request in model.requests() {
        assert_eq!(request.system.as_deref(), Some(INSTRUCTIONS));
        assert_pairs_intact(&request.messages);
    }
    assert_eq!(out.messages.last().unwrap().text(), "All done.");
    let results: Vec<_> = out
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some(r.content.text().into_owned()),
            _ => None,
        })
        .collect();
    assert!(
        results.last().unwrap().starts_with("topic 4: lorem"),
        "the latest result is verbatim: {results:?}"
    );
}

#[tokio::test]
async fn context_events_fire_in_order_before_the_model_call() {
    let recorder = Recorder::new();
    let compaction = Compaction::summarize(300)
        .keep_recent(2)
        .summarizer(ScriptedModel::from_fn(|_, _| ScriptedTurn::text("short")));
    Runtime::new()
        .run(&agent(researcher(), compaction, &recorder), "Research.")
        .await
        .unwrap();
    let kinds = recorder.kinds();
    let at = kinds
        .iter()
        .position(|k| *k == EventKind::BeforeCompact)
        .expect("a compaction");
    assert_eq!(
        kinds[at..at + 3],
        [
            EventKind::BeforeCompact,
            EventKind::AfterCompact,
            EventKind::BeforeModel
        ],
        "{kinds:?}"
    );
    assert_eq!(
        kinds[at - 1],
        EventKind::BeforeStep,
        "compaction opens the step: {kinds:?}"
    );
}

#[tokio::test]
async fn the_window_strategy_drops_older_messages_without_a_model_call() {
    let recorder = Recorder::new();
    let model = researcher();
    let out = Runtime::new()
        .run(
            &agent(
                model.clone(),
                Compaction::window(300).keep_recent(2),
                &recorder,
            ),
            "Research.",
        )
        .await
        .unwrap();
    assert_eq!(out.output.as_deref(), Some("All done."));
    assert_eq!(model.calls(), 5, "no extra model call for a window");
    let notes: Vec<_> = out
        .messages
        .iter()
        .filter(|m| m.text().contains("earlier messages were removed"))
        .collect();
    assert_eq!(notes.len(), 1);
    assert_pairs_intact(&out.messages);
    assert!(
        out.messages.len() < 10,
        "an uncompacted run has 10 messages"
    );
    assert_eq!(
        recorder.of(EventKind::BeforeCompact)[0].detail["strategy"],
        "window"
    );
}

#[tokio::test]
async fn before_compact_may_veto_and_after_compact_may_rewrite_the_summary() {
    let recorder = Recorder::new();
    let vetoing = Agent::builder("researcher")
        .model(researcher())
        .tool(long_lookup())
        .compaction(Compaction::window(300).keep_recent(2))
        .before_compact(|mut ev, _| async move {
            ev.veto("keep everything");
            Ok(ev)
        })
        .with(recorder.clone())
        .build()
        .unwrap();
    let out = Runtime::new().run(&vetoing, "Research.").await.unwrap();
    assert_eq!(out.messages.len(), 10, "nothing was folded");
    assert!(recorder.of(EventKind::AfterCompact).is_empty());
    assert!(!recorder.of(EventKind::BeforeCompact).is_empty());

    let rewriting = Agent::builder("researcher")
        .model(researcher())
        .tool(long_lookup())
        .compaction(Compaction::window(300).keep_recent(2))
        .before_compact(|mut ev, _| async move {
            // Fold one message fewer: the plan is re-aligned onto a safe boundary.
            ev.plan.end -= 1;
            Ok(ev)
        })
        .after_compact(|mut ev, _| async move {
            ev.summary = format!("[{} messages folded by policy]", ev.plan().len());
            Ok(ev)
        })
        .build()
        .unwrap();
    let out = Runtime::new().run(&rewriting, "Research.").await.unwrap();
    assert!(
        out.messages
            .iter()
            .any(|m| m.text().ends_with("messages folded by policy]")),
        "{:#?}",
        out.messages
    );
    assert_pairs_intact(&out.messages);
}

#[tokio::test]
async fn a_failed_summary_goes_on_uncompacted_fails_the_run_or_is_recovered_per_policy() {
    let failing = || ScriptedModel::new().error(ModelErrorKind::Server, "summariser down");
    // Continue (the default): CompactFailed fires, the run goes on with its history intact.
    let recorder = Recorder::new();
    let out = Runtime::new()
        .run(
            &agent(
                researcher(),
                Compaction::summarize(300)
                    .keep_recent(2)
                    .summarizer(ScriptedModel::from_fn(|_, _| {
                        ScriptedTurn::error(ModelErrorKind::Server, "summariser down")
                    })),
                &recorder,
            ),
            "Research.",
        )
        .await
        .unwrap();
    assert_eq!(out.output.as_deref(), Some("All done."));
    assert_eq!(out.messages.len(), 10);
    let errors = recorder.of(EventKind::CompactFailed);
    assert!(!errors.is_empty());
    assert!(
        errors[0].detail["error"]
            .as_str()
            .unwrap()
            .contains("summariser down")
    );
    assert!(recorder.of(EventKind::AfterCompact).is_empty());

    // Fail: the run fails with an error that says what to do.
    let err = Runtime::new()
        .run(
            &agent(
                researcher(),
                Compaction::summarize(300)
                    .keep_recent(2)
                    .summarizer(failing())
                    .on_error(OnCompactError::Fail),
                &Recorder::new(),
            ),
            "Research.",
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Compaction { .. }), "{err}");
    assert!(err.to_string().contains("summariser down"), "{err}");
    assert!(
        err.to_string().contains("OnCompactError::Continue"),
        "{err}"
    );

    // A CompactFailed hook supplies the summary.
    let recovering = Agent::builder("researcher")
        .model(researcher())
        .tool(long_lookup())
        .compaction(
            Compaction::summarize(300)
                .keep_recent(2)
                .summarizer(failing())
                .on_error(OnCompactError::Fail),
        )
        .compact_failed(|mut ev, _| async move {
            ev.recover("a summary from elsewhere");
            Ok(ev)
        })
        .build()
        .unwrap();
    let out = Runtime::new().run(&recovering, "Research.").await.unwrap();
    assert!(
        out.messages
            .iter()
            .any(|m| m.text() == "a summary from elsewhere")
    );
}

#[tokio::test]
async fn a_prompt_under_the_threshold_is_left_alone() {
    let recorder = Recorder::new();
    let out = Runtime::new()
        .run(
            &agent(researcher(), Compaction::summarize(1_000_000), &recorder),
            "Research.",
        )
        .await
        .unwrap();
    assert_eq!(out.messages.len(), 10);
    assert!(recorder.of(EventKind::BeforeCompact).is_empty());
}

#[tokio::test]
async fn a_before_compact_hook_may_switch_the_plan_to_the_window() {
    let summarizer = ScriptedModel::from_fn(|n, _| ScriptedTurn::text(format!("summary {n}")));
    let strategies = Arc::new(Mutex::new(Vec::new()));
    let seen = strategies.clone();
    let agent = Agent::builder("researcher")
        .model(researcher())
        .tool(long_lookup())
        .compaction(
            Compaction::summarize(300)
                .keep_recent(2)
                .summarizer(summarizer.clone()),
        )
        .before_compact(|mut ev, _ctx| async move {
            ev.plan.strategy = CompactStrategy::Window;
            Ok(ev)
        })
        .after_compact(move |ev, _ctx| {
            seen.lock().unwrap().push(ev.plan().strategy);
            std::future::ready(Ok(ev))
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Research.").await.unwrap();

    assert_eq!(
        summarizer.calls(),
        0,
        "the window needs no summarising call"
    );
    assert!(summaries(&out.messages).is_empty());
    assert!(
        out.messages
            .iter()
            .any(|m| m.text().contains("earlier messages were removed")),
        "{:#?}",
        out.messages
    );
    let strategies = strategies.lock().unwrap().clone();
    assert!(!strategies.is_empty());
    assert!(
        strategies.iter().all(|s| *s == CompactStrategy::Window),
        "{strategies:?}"
    );
    assert_pairs_intact(&out.messages);
}

#[tokio::test]
async fn a_compact_error_hook_may_change_the_policy() {
    let agent = |configured: OnCompactError, chosen: OnCompactError| {
        Agent::builder("researcher")
            .model(researcher())
            .tool(long_lookup())
            .compaction(
                Compaction::summarize(300)
                    .keep_recent(2)
                    .summarizer(ScriptedModel::from_fn(|_, _| {
                        ScriptedTurn::error(ModelErrorKind::Server, "summariser down")
                    }))
                    .on_error(configured),
            )
            .compact_failed(move |mut ev, _ctx| async move {
                assert!(ev.error().to_string().contains("summariser down"));
                ev.policy = chosen;
                Ok(ev)
            })
            .build()
            .unwrap()
    };

    // Configured to go on; the hook makes the run fail.
    let err = Runtime::new()
        .run(
            &agent(OnCompactError::Continue, OnCompactError::Fail),
            "Research.",
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Compaction { .. }), "{err}");

    // Configured to fail; the hook lets the run go on uncompacted.
    let out = Runtime::new()
        .run(
            &agent(OnCompactError::Fail, OnCompactError::Continue),
            "Research.",
        )
        .await
        .unwrap();
    assert_eq!(out.output.as_deref(), Some("All done."));
    assert_eq!(out.messages.len(), 10, "nothing was folded");
}

#[tokio::test]
async fn compact_first_compacts_a_session_below_the_threshold_as_a_manual_compaction() {
    let triggers = Arc::new(Mutex::new(Vec::new()));
    let seen = triggers.clone();
    let agent = Agent::builder("chat")
        .model(ScriptedModel::from_fn(|_, _| ScriptedTurn::text("ok")))
        .compaction(Compaction::window(1_000_000).keep_recent(1))
        .before_compact(move |ev, _ctx| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(ev.manual);
                Ok(ev)
            }
        })
        .build()
        .unwrap();
    let runtime = Runtime::new().store(agentry::MemoryStore::new());
    let session = agentry::RunOptions::new().session("s");
    for input in ["one", "two"] {
        runtime
            .run(&agent, input)
            .with(session.clone())
            .await
            .unwrap();
    }
    assert!(triggers.lock().unwrap().is_empty(), "under the threshold");
    let out = runtime
        .run(&agent, "three")
        .with(session.clone().compact_first())
        .await
        .unwrap();
    assert_eq!(*triggers.lock().unwrap(), [true], "one manual compaction");
    // The window dropped the session's earlier turns: the latest one and the answer remain,
    // with the note of what was dropped.
    assert!(out.messages.len() < 6, "{:?}", out.messages);
    // The next run of the session is not compacted again.
    runtime.run(&agent, "four").with(session).await.unwrap();
    assert_eq!(triggers.lock().unwrap().len(), 1);
}
