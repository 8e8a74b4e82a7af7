//! Each model call is reported as a `model_request` event: what was sent, as BeforeModel hooks
//! left it — the system prompt, tools and parameters at the first call and where hooks changed
//! them, the messages by number, and whether hooks rewrote them.

use agentry::prelude::*;
use agentry::{Message, RunStore};

#[derive(Deserialize, JsonSchema)]
struct Query {
    q: String,
}

fn requests(events: &[RunEvent]) -> Vec<&RunEvent> {
    events
        .iter()
        .filter(|e| matches!(e, RunEvent::ModelRequest { .. }))
        .collect()
}

#[tokio::test]
async fn each_model_call_reports_what_it_was_sent_and_only_what_changed() {
    let model = ScriptedModel::new()
        .tool_call("search", json!({"q": "rust"}))
        .tool_call("search", json!({"q": "tokio"}))
        .text("found both");
    let agent = Agent::builder("finder")
        .instructions("Find things. Key: sk-live-0123456789abcdef")
        .model(model.clone())
        .tool(tool(
            "search",
            "Searches.",
            |a: Query, _c: ToolCtx| async move { Ok(format!("results for {}", a.q)) },
        ))
        // At the second call, a hook changes the system prompt and adds a message.
        .with(on::before_model(|mut ev, ctx| async move {
            if ctx.step() == 2 {
                ev.request.system = Some("Be brief.".into());
                ev.request.messages.push(Message::user("(a hint)"));
            }
            Ok(ev)
        }))
        .build()
        .unwrap();
    let store = agentry::MemoryStore::new();
    let runtime = Runtime::new().store(store.clone()).redact(
        agentry::builtins::Redactor::new()
            .pattern(r"sk-live-\w+")
            .unwrap(),
    );
    let mut handle = runtime.run(&agent, "find").start();
    let mut events = Vec::new();
    while let Some(ev) = handle.events().next().await {
        events.push(ev);
    }
    let out = handle.result().await.unwrap();
    assert_eq!(out.output.as_deref(), Some("found both"));

    let sent = requests(&events);
    assert_eq!(sent.len(), 3, "one per model call");
    let RunEvent::ModelRequest {
        messages,
        messages_rewritten,
        system,
        tools,
        params,
        ..
    } = sent[0]
    else {
        unreachable!()
    };
    // The first call: everything, the system prompt masked by the redactor.
    assert_eq!(*messages, 1);
    assert!(!messages_rewritten);
    let system = system.as_deref().unwrap();
    assert!(
        system.starts_with("Find things.") && !system.contains("sk-live"),
        "{system}"
    );
    assert_eq!(tools.as_deref(), Some(&["search".to_owned()][..]));
    assert!(params.is_some());
    // The second: what the hook changed, and the messages it added.
    let json = serde_json::to_value(sent[1]).unwrap();
    assert_eq!(
        json,
        json!({"type": "model_request", "messages": 4, "messages_rewritten": true,
               "system": "Be brief.", "agent_path": "finder"})
    );
    // The third: the hook left it alone, so it is the agent's own request: its messages only.
    let json = serde_json::to_value(sent[2]).unwrap();
    assert_eq!(
        json,
        json!({"type": "model_request", "messages": 5, "agent_path": "finder"})
    );
    // What the model got is what the events say.
    let got = model.requests();
    assert_eq!(got[1].system.as_deref(), Some("Be brief."));
    assert_eq!(got[1].messages.len(), 4);

    // The history records them where they happened: after the step starts, before the answer.
    let kinds: Vec<String> = store
        .events(&out.run_id)
        .await
        .unwrap()
        .iter()
        .map(|e| e.event.kind.clone())
        .collect();
    let first = kinds.iter().position(|k| k == "model_request").unwrap();
    assert_eq!(kinds[first - 1], "step_started", "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| *k == "model_request").count(), 3);
}

#[tokio::test]
async fn a_call_a_hook_answers_is_no_model_request_and_without_hooks_nothing_is_rewritten() {
    let model = ScriptedModel::new().text("from the model");
    let answered = Agent::builder("cached")
        .model(model.clone())
        .with(on::before_model(|mut ev, _| async move {
            ev.respond(agentry::ModelResponse::text("from the cache"));
            Ok(ev)
        }))
        .build()
        .unwrap();
    let mut handle = Runtime::new().run(&answered, "hi").start();
    let mut events = Vec::new();
    while let Some(ev) = handle.events().next().await {
        events.push(ev);
    }
    assert_eq!(
        handle.result().await.unwrap().output.as_deref(),
        Some("from the cache")
    );
    assert!(requests(&events).is_empty(), "no model was called");

    let plain = Agent::builder("plain").model(model).build().unwrap();
    let mut handle = Runtime::new().run(&plain, "hi").start();
    let mut events = Vec::new();
    while let Some(ev) = handle.events().next().await {
        events.push(ev);
    }
    handle.result().await.unwrap();
    let sent = requests(&events);
    assert_eq!(sent.len(), 1);
    let json = serde_json::to_value(sent[0]).unwrap();
    // No system prompt to report; no hook to rewrite anything.
    assert!(
        json.get("system").is_none() && json.get("messages_rewritten").is_none(),
        "{json}"
    );
}
