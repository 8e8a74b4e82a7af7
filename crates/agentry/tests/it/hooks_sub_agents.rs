//! Sub-agents: a child run inherits its parent's hooks (runtime, parent agent and run scope),
//! the parent's hooks wrap the child's own, BeforeSubAgent / AfterSubAgent / SubAgentFailed can
//! block, rewrite and recover, and the child's events reach the parent's event stream.

use crate::common::*;
use agentry::prelude::*;
use agentry::{AgentBuilder, ModelErrorKind};
use agentry::{Message, RunOptions, RunStore, ScriptedTurn, ToolResult};

const CHILD_EVENTS: [&str; 10] = [
    "RunStart",
    "MessageAdded:user",
    "BeforeStep:1",
    "BeforeModel",
    "TextDelta:Paris",
    "AfterModel",
    "MessageAdded:assistant",
    "AfterStep:1",
    "Stop:FinalAnswer",
    "RunEnd",
];

fn is_reverse(event: &str) -> bool {
    [
        "After",
        "RunEnd",
        "RunFailed",
        "ToolFailed",
        "SubAgentFailed",
    ]
    .iter()
    .any(|p| event.starts_with(p))
}

/// A parent whose model delegates to `child` once, then answers.
fn parent_model() -> ScriptedModel {
    ScriptedModel::new()
        .tool_call("child", json!({"input": "find the capital of France"}))
        .text("Paris, says child.")
}

fn parent(model: &ScriptedModel, child: &Agent) -> AgentBuilder<(), String> {
    Agent::builder("parent")
        .model(model.clone())
        .sub_agent(child)
}

fn child_builder(model: &ScriptedModel) -> AgentBuilder<(), String> {
    Agent::builder("child")
        .description("Finds capitals.")
        .model(model.clone())
}

/// The tool result the parent's model received in its request `n`.
fn result_sent(model: &ScriptedModel, n: usize) -> ToolResult {
    model.requests()[n]
        .messages
        .last()
        .and_then(|m| m.tool_result().cloned())
        .expect("the last message is a tool result")
}

#[tokio::test]
async fn runtime_parent_and_run_hooks_fire_for_the_child_and_wrap_its_own_hooks() {
    let log = new_log();
    let child_model = ScriptedModel::new().text("Paris");
    let child = child_builder(&child_model)
        .with(Recorder::new(&log).tagged("ca").with_path())
        .build()
        .unwrap();
    let model = parent_model();
    let agent = parent(&model, &child)
        .with(Recorder::new(&log).tagged("pa").with_path())
        .build()
        .unwrap();
    let runtime = Runtime::new().with(Recorder::new(&log).tagged("rt").with_path());
    let options = RunOptions::new().with(Recorder::new(&log).tagged("run").with_path());

    let out = runtime.run(&agent, "Capital?").with(options).await.unwrap();

    assert_eq!(out.output.as_deref(), Some("Paris, says child."));
    assert_eq!(result_sent(&model, 1).content, "Paris");
    let log = entries(&log);

    // For every child event: the parent's hooks (runtime, parent agent, run) before the child's
    // own on the way in, after it on the way out.
    let child_lines: Vec<&str> = log
        .iter()
        .map(String::as_str)
        .filter(|l| l.split(' ').nth(1) == Some("parent/child"))
        .collect();
    let mut expected = Vec::new();
    for event in CHILD_EVENTS {
        let mut tags = vec!["rt", "pa", "run", "ca"];
        if is_reverse(event) {
            tags.reverse();
        }
        for tag in tags {
            expected.push(format!("{tag} parent/child {event}"));
        }
    }
    assert_eq!(child_lines, expected);

    // The child's own hook sees only the child's events.
    let own: Vec<&str> = log.iter().filter_map(|l| l.strip_prefix("ca ")).collect();
    let child_only: Vec<String> = CHILD_EVENTS
        .iter()
        .map(|e| format!("parent/child {e}"))
        .collect();
    assert_eq!(own, child_only);

    // The parent agent's hook sees the whole run, the child's nested inside the tool call.
    let parent_view: Vec<&str> = log.iter().filter_map(|l| l.strip_prefix("pa ")).collect();
    let mut expected = vec![
        "parent RunStart".to_string(),
        "parent MessageAdded:user".into(),
        "parent BeforeStep:1".into(),
        "parent BeforeModel".into(),
        "parent AfterModel".into(),
        "parent MessageAdded:assistant".into(),
        "parent BeforeTool:child".into(),
        "parent BeforeSubAgent:child".into(),
    ];
    expected.extend(child_only.iter().cloned());
    expected.extend(
        [
            "parent AfterSubAgent:child",
            "parent AfterTool:child",
            "parent MessageAdded:tool",
            "parent AfterStep:1",
            "parent BeforeStep:2",
            "parent BeforeModel",
            "parent TextDelta:Paris, says child.",
            "parent AfterModel",
            "parent MessageAdded:assistant",
            "parent AfterStep:2",
            "parent Stop:FinalAnswer",
            "parent RunEnd",
        ]
        .map(String::from),
    );
    assert_eq!(parent_view, expected);

    // The runtime and run-scope hooks saw exactly what the parent agent's hook saw.
    for tag in ["rt", "run"] {
        let view: Vec<&str> = log
            .iter()
            .filter_map(|l| l.strip_prefix(tag).and_then(|r| r.strip_prefix(' ')))
            .collect();
        assert_eq!(view, parent_view, "{tag}");
    }
}

#[tokio::test]
async fn the_child_run_has_its_own_id_and_knows_its_parent() {
    let seen = new_log();
    let (s1, s2) = (seen.clone(), seen.clone());
    let child_model = ScriptedModel::new().text("Paris");
    let child = child_builder(&child_model)
        .run_start(move |ev, ctx| {
            push(
                &s1,
                format!(
                    "child ctx: name={} path={} parent={:?} run_id_is_parent={}",
                    ctx.agent_name(),
                    ctx.agent_path(),
                    ctx.parent_run_id(),
                    ctx.run_id() == "parent-run"
                ),
            );
            std::future::ready(Ok(ev))
        })
        .build()
        .unwrap();
    let model = parent_model();
    let agent = parent(&model, &child)
        .after_sub_agent(move |ev, ctx| {
            push(
                &s2,
                format!(
                    "after: agent={} input={} output={} in={} child_run_is_parent={}",
                    ev.agent(),
                    ev.input(),
                    ev.output,
                    ctx.run_id(),
                    ev.run_id() == ctx.run_id()
                ),
            );
            std::future::ready(Ok(ev))
        })
        .build()
        .unwrap();

    Runtime::new()
        .run(&agent, "Capital?")
        .with(RunOptions::new().run_id("parent-run"))
        .await
        .unwrap();

    assert_eq!(
        entries(&seen),
        [
            "child ctx: name=child path=parent/child parent=Some(\"parent-run\") run_id_is_parent=false",
            "after: agent=child input=find the capital of France output=Paris in=parent-run child_run_is_parent=false",
        ]
    );
}

#[tokio::test]
async fn before_sub_agent_block_keeps_the_child_from_running() {
    let child_model = ScriptedModel::new().text("Paris");
    let child = child_builder(&child_model).build().unwrap();
    let model = parent_model();
    let agent = parent(&model, &child)
        .before_sub_agent(|mut ev, _ctx| async move {
            if ev.agent() == "child" {
                ev.block("the child agent is disabled");
            }
            Ok(ev)
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Capital?").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("Paris, says child."));
    assert_eq!(child_model.calls(), 0, "a blocked sub-agent must not run");
    let sent = result_sent(&model, 1);
    assert!(sent.is_error);
    assert_eq!(sent.name, "child");
    assert_eq!(sent.content, "the child agent is disabled");
}

#[tokio::test]
async fn before_sub_agent_rewrites_the_child_input() {
    let seen = new_log();
    let s = seen.clone();
    let child_model = ScriptedModel::new().text("Paris");
    let child = child_builder(&child_model).build().unwrap();
    let model = parent_model();
    let agent = parent(&model, &child)
        .before_sub_agent(|mut ev, _ctx| async move {
            ev.input = format!("{} (answer in one word)", ev.input);
            Ok(ev)
        })
        .after_sub_agent(move |ev, _ctx| {
            push(&s, ev.input());
            std::future::ready(Ok(ev))
        })
        .build()
        .unwrap();

    Runtime::new().run(&agent, "Capital?").await.unwrap();

    assert_eq!(
        child_model.requests()[0].messages.to_vec(),
        [Message::user(
            "find the capital of France (answer in one word)"
        )]
    );
    assert_eq!(
        entries(&seen),
        ["find the capital of France (answer in one word)"]
    );
}

#[tokio::test]
async fn after_sub_agent_rewrites_the_output_the_parent_model_sees() {
    let child_model = ScriptedModel::new().text("Paris");
    let child = child_builder(&child_model).build().unwrap();
    let model = parent_model();
    let agent = parent(&model, &child)
        .after_sub_agent(|mut ev, _ctx| async move {
            ev.output = format!("[verified] {}", ev.output);
            Ok(ev)
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Capital?").await.unwrap();

    let sent = result_sent(&model, 1);
    assert!(!sent.is_error);
    assert_eq!(sent.content, "[verified] Paris");
    assert_eq!(tool_results(&out.messages), [sent]);
}

#[tokio::test]
async fn sub_agent_error_recovers_when_the_child_fails() {
    let log = new_log();
    let errors = new_log();
    let e = errors.clone();
    let child_model = ScriptedModel::new().error(ModelErrorKind::Server, "child model down");
    let child = child_builder(&child_model).build().unwrap();
    let model = parent_model();
    let agent = parent(&model, &child)
        .sub_agent_failed(move |mut ev, _ctx| {
            push(&e, format!("{}: {}", ev.agent(), ev.error()));
            ev.recover("the child is unavailable; answer without it");
            std::future::ready(Ok(ev))
        })
        // Registered last: error events run in reverse, so it sees SubAgentFailed before the
        // recovering hook ends the chain.
        .with(
            Recorder::new(&log)
                .events(lifecycle_unstreamed())
                .with_path(),
        )
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Capital?").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("Paris, says child."));
    assert_eq!(child_model.calls(), 1);
    let errors = entries(&errors);
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with("child: sub-agent `child` failed: ")
            && errors[0].contains("child model down"),
        "{errors:?}"
    );
    let sent = result_sent(&model, 1);
    assert!(!sent.is_error);
    assert_eq!(sent.content, "the child is unavailable; answer without it");
    // The child fails (its RunFailed fires with the inherited hook), then the parent recovers.
    let log = entries(&log);
    let from = log
        .iter()
        .position(|l| l == "parent BeforeSubAgent:child")
        .expect("BeforeSubAgent fired");
    assert_eq!(
        log[from..from + 9],
        [
            "parent BeforeSubAgent:child",
            "parent/child RunStart",
            "parent/child MessageAdded:user",
            "parent/child BeforeStep:1",
            "parent/child BeforeModel",
            "parent/child RunFailed",
            "parent SubAgentFailed:child",
            "parent AfterTool:child",
            "parent MessageAdded:tool",
        ]
    );
}

#[tokio::test]
async fn a_failing_child_without_recovery_is_an_error_result_for_the_parent_model() {
    let child_model = ScriptedModel::new().error(ModelErrorKind::Server, "child model down");
    let child = child_builder(&child_model).build().unwrap();
    let model = parent_model();
    let agent = parent(&model, &child).build().unwrap();

    let out = Runtime::new().run(&agent, "Capital?").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("Paris, says child."));
    let sent = result_sent(&model, 1);
    assert!(sent.is_error);
    assert!(
        sent.content
            .text()
            .starts_with("sub-agent `child` failed: ")
            && sent.content.text().contains("child model down"),
        "{}",
        sent.content
    );
}

fn describe(ev: &RunEvent) -> String {
    let what = match ev {
        RunEvent::RunStarted { .. } => "RunStarted".to_string(),
        RunEvent::StepStarted { step, .. } => format!("StepStarted:{step}"),
        RunEvent::StepFinished { step, .. } => format!("StepFinished:{step}"),
        RunEvent::ModelRequest { messages, .. } => format!("ModelRequest:{messages}"),
        RunEvent::TextDelta { text, .. } => format!("TextDelta:{text}"),
        RunEvent::ThinkingDelta { text, .. } => format!("ThinkingDelta:{text}"),
        RunEvent::ToolStarted { name, .. } => format!("ToolStarted:{name}"),
        RunEvent::ToolFinished { result, .. } => format!("ToolFinished:{}", result.name),
        RunEvent::StatePatch { .. } => "StatePatch".to_string(),
        RunEvent::Message { message, .. } => format!("Message:{}", role(message)),
        RunEvent::Custom { name, .. } => format!("Custom:{name}"),
        RunEvent::RunFinished { stop, .. } => format!("RunFinished:{stop:?}"),
        RunEvent::RunFailed { error, .. } => format!("RunFailed:{error}"),
        other => format!("{other:?}"),
    };
    format!("{} {what}", ev.agent_path())
}

#[tokio::test]
async fn the_child_events_reach_the_parent_event_stream_under_the_child_path() {
    let child_model = ScriptedModel::new().text("Paris");
    let child = child_builder(&child_model)
        .run_start(|ev, ctx| {
            ctx.emit("child-note", json!({"from": ctx.agent_path()}));
            std::future::ready(Ok(ev))
        })
        .build()
        .unwrap();
    let model = parent_model();
    let agent = parent(&model, &child).build().unwrap();

    let mut handle = Runtime::new().run(&agent, "Capital?").start();
    let mut events = Vec::new();
    while let Some(ev) = handle.events().next().await {
        events.push(ev);
    }
    let out = handle.result().await.unwrap();

    assert_eq!(out.output.as_deref(), Some("Paris, says child."));
    let lines: Vec<String> = events.iter().map(describe).collect();
    assert_eq!(
        lines,
        [
            "parent RunStarted",
            "parent Message:user",
            "parent StepStarted:1",
            "parent ModelRequest:1",
            "parent Message:assistant",
            "parent ToolStarted:child",
            "parent/child RunStarted",
            "parent/child Custom:child-note",
            "parent/child Message:user",
            "parent/child StepStarted:1",
            "parent/child ModelRequest:1",
            "parent/child TextDelta:Paris",
            "parent/child Message:assistant",
            "parent/child StepFinished:1",
            "parent/child RunFinished:FinalAnswer",
            "parent ToolFinished:child",
            "parent Message:tool",
            "parent StepFinished:1",
            "parent StepStarted:2",
            "parent ModelRequest:3",
            "parent TextDelta:Paris, says child.",
            "parent Message:assistant",
            "parent StepFinished:2",
            "parent RunFinished:FinalAnswer",
        ]
    );
    let note = events
        .iter()
        .find_map(|ev| match ev {
            RunEvent::Custom { data, .. } => Some(data.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(note, json!({"from": "parent/child"}));
}

#[tokio::test]
async fn a_run_records_its_sub_agents_events_where_they_happened_and_each_child_its_own() {
    // parent -> child -> grandchild, each called once.
    let grandchild = Agent::builder("grandchild")
        .description("Knows.")
        .model(ScriptedModel::new().text("Paris"))
        .build()
        .unwrap();
    let child = child_builder(
        &ScriptedModel::new()
            .tool_call("grandchild", json!({"input": "which city?"}))
            .text("Paris, says grandchild."),
    )
    .sub_agent(&grandchild)
    .build()
    .unwrap();
    let agent = parent(&parent_model(), &child).build().unwrap();
    let store = agentry::MemoryStore::new();
    let runtime = Runtime::new().store(store.clone());

    let mut handle = runtime.run(&agent, "Capital?").start();
    let mut streamed = Vec::new();
    while let Some(ev) = handle.events().next().await {
        streamed.push(ev);
    }
    let out = handle.result().await.unwrap();

    // The parent's history: every event of the stream but streamed text, in the stream's order.
    let recorded = |run_id: String| {
        let store = store.clone();
        async move {
            store
                .events(&run_id)
                .await
                .unwrap()
                .iter()
                .map(|e| describe(&RunEvent::from_recorded(&e.event).unwrap()))
                .collect::<Vec<_>>()
        }
    };
    let expected: Vec<String> = streamed
        .iter()
        .filter(|e| !matches!(e, RunEvent::TextDelta { .. }))
        .map(describe)
        .collect();
    let parent_history = recorded(out.run_id.clone()).await;
    assert_eq!(parent_history, expected);
    assert!(parent_history.contains(&"parent/child/grandchild RunStarted".to_string()));

    // The child's own run: its events and its sub-agent's, none of its parent's.
    let child_run = streamed
        .iter()
        .find_map(|e| match e {
            RunEvent::RunStarted { run_id, agent_path } if &**agent_path == "parent/child" => {
                Some(run_id.clone())
            }
            _ => None,
        })
        .unwrap();
    let child_history = recorded(child_run).await;
    let below: Vec<&String> = expected
        .iter()
        .filter(|l| l.starts_with("parent/child"))
        .collect();
    assert_eq!(child_history.iter().collect::<Vec<_>>(), below);
    assert_eq!(child_history.first().unwrap(), "parent/child RunStarted");
}

#[tokio::test]
async fn calls_of_one_sub_agent_at_once_are_told_apart_by_the_run_each_event_names() {
    // The child streams its task back slowly, so the two calls' events interleave.
    let child = Agent::builder("child")
        .description("Echoes.")
        .model(ScriptedModel::from_fn(|_, req| {
            let task = req.messages[0].text().into_owned();
            ScriptedTurn::new()
                .with_text_deltas(task.split(' ').map(|w| format!("{w} ")).collect::<Vec<_>>())
        }))
        .build()
        .unwrap();
    let model = ScriptedModel::new()
        .turn(
            ScriptedTurn::new()
                .with_tool_call("child", json!({"input": "one two three"}))
                .with_tool_call("child", json!({"input": "four five six"})),
        )
        .text("both answered");
    let agent = parent(&model, &child).build().unwrap();
    let store = agentry::MemoryStore::new();
    let mut handle = Runtime::new()
        .store(store.clone())
        .run(&agent, "go")
        .start();
    let mut events = Vec::new();
    while let Some(ev) = handle.events().next().await {
        events.push(ev);
    }
    let out = handle.result().await.unwrap();
    assert_eq!(out.output.as_deref(), Some("both answered"));

    // The run's own events name no run; each sub-agent event names one of two runs, and the
    // text of each run is its own task.
    let mut texts: std::collections::BTreeMap<String, String> = Default::default();
    for ev in &events {
        match ev.sub_agent_run() {
            None => assert!(
                !ev.is_sub_agent(),
                "a sub-agent's event without its run: {ev:?}"
            ),
            Some(run) => {
                if let RunEvent::TextDelta { text, .. } = ev {
                    texts.entry(run.to_owned()).or_default().push_str(text);
                }
            }
        }
    }
    let mut said: Vec<&str> = texts.values().map(|t| t.trim()).collect();
    said.sort();
    assert_eq!(said, ["four five six", "one two three"]);
    let started: Vec<&str> = events
        .iter()
        .filter(|e| matches!(e, RunEvent::RunStarted { .. }) && e.is_sub_agent())
        .filter_map(RunEvent::sub_agent_run)
        .collect();
    assert_eq!(started.len(), 2);
    assert!(started.iter().all(|r| texts.contains_key(*r)));
    // The stored history names them too.
    let stored = store.events(&out.run_id).await.unwrap();
    let named = stored
        .iter()
        .filter_map(|e| RunEvent::from_recorded(&e.event).ok())
        .filter(|e| e.is_sub_agent())
        .all(|e| e.sub_agent_run().is_some_and(|r| texts.contains_key(r)));
    assert!(named);
}

/// A new run's snapshot, as an engine that drives runs itself opens its effects with.
fn fresh(run_id: &str, agent: &str, parent: Option<&str>) -> agentry::RunSnapshot {
    agentry::RunSnapshot {
        parent_run_id: parent.map(String::from),
        ..agentry::RunSnapshot::new(run_id, agent)
    }
}

#[tokio::test]
async fn a_delegated_sub_agent_call_runs_the_same_hooks_as_one_run_in_process() {
    use agentry_runtime::effects::{CallOutcome, Lineage, SubAgentOutcome};
    let build = |log: &Log| {
        let child = child_builder(&ScriptedModel::new().text("Paris"))
            .with(Recorder::new(log).tagged("ca").with_path())
            .build()
            .unwrap();
        let agent = parent(&parent_model(), &child)
            .with(Recorder::new(log).tagged("pa").with_path())
            .build()
            .unwrap();
        let runtime = Runtime::new().with(Recorder::new(log).tagged("rt").with_path());
        (runtime, agent, child)
    };

    // In-process, up to the end of the parent's tool call.
    let in_process = new_log();
    let (runtime, agent, _) = build(&in_process);
    runtime.run(&agent, "Capital?").await.unwrap();
    let mut expected = entries(&in_process);
    let last = expected
        .iter()
        .rposition(|l| l.ends_with("parent AfterTool:child"))
        .unwrap();
    expected.truncate(last + 1);

    // Driven step by step, the sub-agent handed over and run as a run of its own.
    let log = new_log();
    let (runtime, agent, child) = build(&log);
    let mut effects = runtime
        .effects(agent.def(), &fresh("p-1", "parent", None))
        .unwrap();
    effects.delegate_sub_agents();
    effects.run_start("Capital?".into()).await.unwrap();
    effects.before_step(1).await.unwrap();
    let turn = effects.model_turn(1).await.unwrap();
    effects.accept_turn(turn).await.unwrap();
    let CallOutcome::SubAgent(request) = effects.tool_call(0, None).await.unwrap() else {
        panic!("the sub-agent call is handed over");
    };
    assert_eq!(
        (request.agent.as_str(), request.task.as_str()),
        ("child", "find the capital of France")
    );

    let (events, _) = futures::channel::mpsc::unbounded();
    let ancestors = [agent.def().clone()];
    let lineage = Lineage {
        ancestors: &ancestors,
        root_run_id: "p-1",
    };
    let mut sub = runtime
        .sub_agent_effects(
            lineage,
            child.def(),
            &fresh("c-1", "child", Some("p-1")),
            events,
        )
        .unwrap();
    sub.run_start(request.task.clone().into()).await.unwrap();
    sub.before_step(1).await.unwrap();
    let turn = sub.model_turn(1).await.unwrap();
    sub.accept_turn(turn).await.unwrap();
    sub.end_step(1, Default::default()).await.unwrap();
    let answer = json!("Paris");
    sub.stop(StopReason::FinalAnswer, Some(&answer))
        .await
        .unwrap();
    sub.run_end(StopReason::FinalAnswer, Some(answer.clone()))
        .await
        .unwrap();
    let outcome = SubAgentOutcome::of_run(
        "child",
        "c-1".into(),
        Some(answer),
        &StopReason::FinalAnswer,
    );

    let closed = effects
        .sub_agent_finished(0, request, outcome)
        .await
        .unwrap();
    let CallOutcome::Done(result) = closed else {
        panic!("the call closes with a result: {closed:?}");
    };
    assert_eq!(result.content, "Paris");
    assert_eq!(entries(&log), expected);
}

#[tokio::test]
async fn a_delegated_sub_agent_past_the_nesting_limit_is_refused() {
    use agentry_runtime::effects::Lineage;
    let child = child_builder(&ScriptedModel::new().text("Paris"))
        .build()
        .unwrap();
    let agent = parent(&parent_model(), &child).build().unwrap();
    let runtime = Runtime::new().max_depth(1);
    let ancestors = [agent.def().clone(), agent.def().clone()];
    let lineage = Lineage {
        ancestors: &ancestors,
        root_run_id: "p-1",
    };
    let (events, _) = futures::channel::mpsc::unbounded();
    let refused = runtime
        .sub_agent_effects(
            lineage,
            child.def(),
            &fresh("c-1", "child", Some("p-1")),
            events,
        )
        .unwrap_err();
    assert!(
        matches!(refused, Error::DepthLimit { depth: 2, limit: 1, ref path } if path == "parent/parent"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_sub_agent_of_a_run_in_a_session_starts_afresh_and_the_session_goes_on() {
    let helper = Agent::builder("helper")
        .model(ScriptedModel::from_fn(|_, req| {
            ScriptedTurn::text(format!("helper saw {} message(s)", req.messages.len()))
        }))
        .build()
        .unwrap();
    let lead = Agent::builder("lead")
        .model(ScriptedModel::from_fn(|_, req| {
            match req.messages.iter().rev().find_map(|m| m.tool_result()) {
                Some(r)
                    if req
                        .messages
                        .last()
                        .is_some_and(|m| m.tool_result().is_some()) =>
                {
                    ScriptedTurn::text(format!("lead: {}", r.content))
                }
                _ => ScriptedTurn::new().with_tool_call("helper", json!({"input": "help"})),
            }
        }))
        .sub_agent(&helper)
        .build()
        .unwrap();
    let runtime = Runtime::new().store(agentry::MemoryStore::new());
    let options = || RunOptions::new().session("s-1");
    let first = runtime.run(&lead, "one").with(options()).await.unwrap();
    assert_eq!(first.text, "lead: helper saw 1 message(s)");
    // The second run of the session goes on from the first; its sub-agent starts afresh.
    let second = runtime.run(&lead, "two").with(options()).await.unwrap();
    assert_eq!(second.text, "lead: helper saw 1 message(s)");
    assert!(second.messages.len() > first.messages.len());
}
