//! The event stream: what a run reports, in order.

use super::*;
use agentry::{Message, RunOptions, ScriptedTurn};

#[derive(Clone, Debug, PartialEq)]
struct SeenOptions {
    run_id: String,
    agent_path: String,
    session: Option<String>,
    user: Option<String>,
    tags: Vec<String>,
    metadata: serde_json::Map<String, Value>,
}

#[tokio::test]
async fn the_event_stream_reports_the_whole_run_in_order() {
    let customs: Shared<(String, Value)> = shared();
    let customs2 = customs.clone();
    let options_seen: Shared<SeenOptions> = shared();
    let options_seen2 = options_seen.clone();

    let work = tool("work", "Works", |a: Text, ctx: ToolCtx| async move {
        ctx.emit("progress", json!({"pct": 50, "on": a.text}));
        Ok(format!("worked on {}", a.text))
    });
    let model = ScriptedModel::new()
        .turn(
            ScriptedTurn::new()
                .with_thinking("let me ")
                .with_thinking("think")
                .with_tool_call("work", json!({"text": "w"})),
        )
        .turn(ScriptedTurn::new().with_text_deltas(["Hel", "lo"]));
    let agent = Agent::builder("streamer")
        .model(model)
        .tool(work)
        .custom(move |ev, _ctx| {
            customs2
                .lock()
                .unwrap()
                .push((ev.name().to_string(), ev.data().clone()));
            async move { Ok(ev) }
        })
        .before_tool(move |ev, ctx| {
            options_seen2.lock().unwrap().push(SeenOptions {
                run_id: ctx.run_id().to_string(),
                agent_path: ctx.agent_path().to_string(),
                session: ctx.session_id().map(str::to_string),
                user: ctx.user_id().map(str::to_string),
                tags: ctx.tags().to_vec(),
                metadata: ctx.metadata().clone(),
            });
            async move { Ok(ev) }
        })
        .build()
        .unwrap();
    let options = RunOptions::new()
        .run_id("run-42")
        .session("s-1")
        .user("u-7")
        .tag("beta")
        .tag("nightly")
        .metadata("tenant", "acme");
    let mut handle = Runtime::new().run(&agent, "start").with(options).start();
    assert_eq!(handle.run_id(), "run-42");
    let events = rest_of_stream(&mut handle).await;
    let out = handle.result().await.unwrap();
    assert_eq!(out.output.as_deref(), Some("Hello"));
    assert_eq!(out.run_id, "run-42");

    // First and last.
    match events.first() {
        Some(RunEvent::RunStarted { run_id, agent_path }) => {
            assert_eq!(run_id, "run-42");
            assert_eq!(&**agent_path, "streamer");
        }
        other => panic!("first event: {other:?}"),
    }
    match events.last() {
        Some(RunEvent::RunFinished { run_id, stop, .. }) => {
            assert_eq!(run_id, "run-42");
            assert_eq!(*stop, StopReason::FinalAnswer);
        }
        other => panic!("last event: {other:?}"),
    }
    assert!(events.iter().all(|e| e.agent_path() == "streamer"));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(
                e,
                RunEvent::RunStarted { .. } | RunEvent::RunFinished { .. }
            ))
            .count(),
        2
    );

    // Streamed text and reasoning, in order.
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["Hel", "lo"]);
    let thoughts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::ThinkingDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thoughts, ["let me ", "think"]);

    // Steps.
    let steps: Vec<(bool, u32)> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::StepStarted { step, .. } => Some((true, *step)),
            RunEvent::StepFinished { step, .. } => Some((false, *step)),
            _ => None,
        })
        .collect();
    assert_eq!(steps, [(true, 1), (false, 1), (true, 2), (false, 2)]);

    // The tool call: started, its custom event, finished.
    let pos = |f: &dyn Fn(&RunEvent) -> bool| {
        events
            .iter()
            .position(f)
            .unwrap_or_else(|| panic!("missing event in {events:#?}"))
    };
    let started = pos(&|e| {
        matches!(e, RunEvent::ToolStarted { name, input, call_id, .. }
            if name == "work" && *input == json!({"text": "w"}) && call_id == "call_1_1")
    });
    let custom = pos(&|e| {
        matches!(e, RunEvent::Custom { name, data, .. }
            if name == "progress" && *data == json!({"pct": 50, "on": "w"}))
    });
    let finished = pos(&|e| {
        matches!(e, RunEvent::ToolFinished { result, .. }
            if result.content == "worked on w" && !result.is_error && result.call_id == "call_1_1")
    });
    let first_text = pos(&|e| matches!(e, RunEvent::TextDelta { .. }));
    let last_thought = events
        .iter()
        .rposition(|e| matches!(e, RunEvent::ThinkingDelta { .. }))
        .unwrap();
    assert!(last_thought < started);
    assert!(started < custom && custom < finished && finished < first_text);

    // Every message of the history, in order.
    let messages: Vec<Message> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Message { message, .. } => Some((**message).clone()),
            _ => None,
        })
        .collect();
    assert_eq!(messages, out.messages.to_vec());
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[0], Message::user("start"));
    match &messages[1] {
        Message::Assistant {
            thinking,
            tool_calls,
            ..
        } => {
            assert_eq!(thinking.as_ref().unwrap().text, "let me think");
            assert_eq!(tool_calls[0].name, "work");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        messages[2].tool_result_text().as_deref(),
        Some("worked on w")
    );
    assert_eq!(messages[3], Message::assistant("Hello"));

    // Hooks saw the custom event and the run's options.
    assert_eq!(
        take(&customs),
        [("progress".to_string(), json!({"pct": 50, "on": "w"}))]
    );
    let mut metadata = serde_json::Map::new();
    metadata.insert("tenant".into(), json!("acme"));
    assert_eq!(
        take(&options_seen),
        [SeenOptions {
            run_id: "run-42".into(),
            agent_path: "streamer".into(),
            session: Some("s-1".into()),
            user: Some("u-7".into()),
            tags: vec!["beta".into(), "nightly".into()],
            metadata,
        }]
    );
}

#[tokio::test]
async fn custom_events_from_hooks_reach_the_stream_and_custom_hooks() {
    let customs: Shared<String> = shared();
    let customs2 = customs.clone();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("hi"))
        .run_start(|ev, ctx| async move {
            ctx.emit("audit", json!("started"));
            Ok(ev)
        })
        .custom(move |ev, ctx| {
            customs2.lock().unwrap().push(format!(
                "{}={} by {}",
                ev.name(),
                ev.data(),
                ctx.hook_name()
            ));
            async move { Ok(ev) }
        })
        .build()
        .unwrap();
    let mut handle = Runtime::new().run(&agent, "go").start();
    let events = rest_of_stream(&mut handle).await;
    handle.result().await.unwrap();
    assert_eq!(take(&customs), ["audit=\"started\" by Custom"]);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::Custom { name, data, .. }
        if name == "audit" && *data == json!("started")))
    );
}

#[tokio::test]
async fn run_options_reach_every_hook_of_a_plain_run() {
    let seen: Shared<String> = shared();
    let seen2 = seen.clone();
    let seen3 = seen.clone();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("hi"))
        .build()
        .unwrap();
    let options = RunOptions::new()
        .session("s")
        .user("u")
        .tag("t")
        .metadata("k", 1)
        .with(on::run_start(move |ev, ctx| {
            seen2.lock().unwrap().push(format!(
                "start {:?} {:?} {:?} {:?}",
                ctx.session_id(),
                ctx.user_id(),
                ctx.tags(),
                ctx.metadata().get("k")
            ));
            async move { Ok(ev) }
        }))
        .with(on::run_end(move |ev, ctx| {
            seen3
                .lock()
                .unwrap()
                .push(format!("end {:?} {}", ctx.session_id(), ev.stop()));
            async move { Ok(ev) }
        }));
    Runtime::new()
        .run(&agent, "go")
        .with(options)
        .await
        .unwrap();
    assert_eq!(
        take(&seen),
        [
            "start Some(\"s\") Some(\"u\") [\"t\"] Some(Number(1))",
            "end Some(\"s\") final answer"
        ]
    );
}
