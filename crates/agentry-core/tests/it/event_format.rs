//! The one JSON form of run events: what the store records, durable runtimes carry, `--json`
//! prints and the server streams. Histories recorded before the form was versioned still load.

use agentry_core::agent::CompactStrategy;
use agentry_core::hooks::EventKind;
use agentry_core::{
    Decision, Message, PendingApproval, RecordedEvent, RunEvent, StateSource, StopReason,
    StoredEvent, ToolResult, Usage,
};
use serde_json::{Value, json};
use std::sync::Arc;

/// One event of every kind.
fn every_kind() -> Vec<RunEvent> {
    let path: Arc<str> = "parent/child".into();
    let patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "add", "path": "/n", "value": 1}])).unwrap();
    vec![
        RunEvent::RunStarted {
            run_id: "r".into(),
            agent_path: path.clone(),
        },
        RunEvent::StepStarted {
            step: 1,
            agent_path: path.clone(),
            run_id: None,
        },
        RunEvent::StepFinished {
            step: 1,
            usage: Usage::new(12, 3),
            agent_path: path.clone(),
            run_id: None,
        },
        RunEvent::TextDelta {
            text: "he".into(),
            agent_path: path.clone(),
            run_id: None,
        },
        RunEvent::ThinkingDelta {
            text: "hm".into(),
            agent_path: path.clone(),
            run_id: None,
        },
        RunEvent::ToolStarted {
            call_id: "c".into(),
            name: "echo".into(),
            input: json!({"text": "x"}),
            agent_path: path.clone(),
            run_id: None,
        },
        RunEvent::ToolFinished {
            result: ToolResult::ok("c", "echo", "x"),
            agent_path: path.clone(),
            run_id: None,
        },
        RunEvent::StatePatch {
            patch,
            source: StateSource::Hook("h".into()),
            agent_path: path.clone(),
            run_id: None,
        },
        RunEvent::Message {
            message: Arc::new(Message::user("hi")),
            agent_path: path.clone(),
            run_id: None,
        },
        RunEvent::Compacted {
            removed: 4,
            strategy: CompactStrategy::Summarize,
            summary: "s".into(),
            agent_path: path.clone(),
            run_id: None,
        },
        RunEvent::Custom {
            name: "n".into(),
            data: json!({"k": [1, 2]}),
            agent_path: path.clone(),
            run_id: None,
        },
        RunEvent::HookDecision {
            hook: "guard".into(),
            event: EventKind::BeforeTool,
            decision: "blocked".into(),
            call_id: "c".into(),
            tool: "echo".into(),
            detail: "no".into(),
            agent_path: path.clone(),
            run_id: None,
        },
        RunEvent::AwaitingApproval {
            pending: vec![PendingApproval {
                call_id: "c".into(),
                tool: "echo".into(),
                input: json!({}),
                reason: "ask".into(),
            }],
            agent_path: path.clone(),
            run_id: None,
        },
        RunEvent::ApprovalResolved {
            decision: Decision::reject("c", "no"),
            by: "person".into(),
            agent_path: path.clone(),
            run_id: None,
        },
        RunEvent::RunFinished {
            run_id: "r".into(),
            stop: StopReason::MaxSteps { limit: 3 },
            agent_path: path.clone(),
        },
        RunEvent::RunFailed {
            run_id: "r".into(),
            error: "e".into(),
            agent_path: path,
        },
    ]
}

#[test]
fn every_event_is_tagged_with_its_kind_and_reads_back_the_same() {
    for event in every_kind() {
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["type"], event.kind(), "{json}");
        assert_eq!(json["agent_path"], "parent/child", "{json}");
        let back: RunEvent = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, event, "{json}");
    }
}

#[test]
fn a_sub_agents_event_names_its_run_and_the_runs_own_do_not() {
    let run: Arc<str> = "child-run".into();
    for event in every_kind() {
        // Every kind names the sub-agent's run: the start and end in `run_id` as always, the
        // others once the runtime names it.
        let named = event.with_run_id(&run);
        let json = serde_json::to_value(&named).unwrap();
        let expected = match &named {
            RunEvent::RunStarted { .. } => "r",
            RunEvent::RunFinished { run_id, .. } | RunEvent::RunFailed { run_id, .. } => run_id,
            _ => "child-run",
        };
        assert_eq!(json["run_id"], expected, "{json}");
        assert_eq!(
            named.sub_agent_run(),
            Some(expected).filter(|r| !r.is_empty())
        );
        assert_eq!(serde_json::from_value::<RunEvent>(json).unwrap(), named);
    }
    // The run's own events (an agent path without `/`) name none, and carry no `run_id` field
    // but their start's and end's.
    let own = RunEvent::StepStarted {
        step: 1,
        agent_path: "planner".into(),
        run_id: None,
    };
    assert_eq!(own.sub_agent_run(), None);
    assert_eq!(
        serde_json::to_value(&own).unwrap(),
        json!({"type": "step_started", "step": 1, "agent_path": "planner"})
    );
}

#[test]
fn a_recorded_event_is_the_json_form_without_its_type_and_reads_back_the_same() {
    for event in every_kind() {
        let Some(recorded) = event.to_recorded() else {
            assert!(matches!(
                event,
                RunEvent::TextDelta { .. } | RunEvent::ThinkingDelta { .. }
            ));
            continue;
        };
        let mut json = serde_json::to_value(&event).unwrap();
        json.as_object_mut().unwrap().remove("type");
        assert_eq!(
            (recorded.kind.as_str(), &recorded.data),
            (event.kind(), &json)
        );
        assert_eq!(RunEvent::from_recorded(&recorded).unwrap(), event);
    }
}

#[test]
fn a_history_recorded_before_the_versioned_form_still_loads() {
    let file = include_str!("../fixtures/recorded-events-before-v1.json");
    let stored: Vec<StoredEvent> = serde_json::from_str(file).unwrap();
    let events: Vec<RunEvent> = stored
        .iter()
        .map(|s| RunEvent::from_recorded(&s.event).unwrap_or_else(|e| panic!("{}: {e}", s.seq)))
        .collect();
    let kinds: Vec<&str> = events.iter().map(RunEvent::kind).collect();
    let recorded: Vec<&str> = stored.iter().map(|s| s.event.kind.as_str()).collect();
    assert_eq!(kinds, recorded);
    // What it recorded reads as it was; what it did not (the agent path, but for the start; the
    // run id at the end) takes its default.
    assert_eq!(events[0].agent_path(), "helper");
    assert!(events[1..].iter().all(|e| e.agent_path().is_empty()));
    match &events[4] {
        RunEvent::HookDecision { event, tool, .. } => {
            assert_eq!((*event, tool.as_str()), (EventKind::BeforeTool, "Bash"))
        }
        other => panic!("{other:?}"),
    }
    match &events[6] {
        RunEvent::ApprovalResolved { decision, .. } => assert!(decision.is_approved()),
        other => panic!("{other:?}"),
    }
    match &events[12] {
        RunEvent::Compacted { strategy, .. } => assert_eq!(*strategy, CompactStrategy::Window),
        other => panic!("{other:?}"),
    }
    match &events[14] {
        RunEvent::RunFinished { stop, run_id, .. } => {
            assert_eq!((stop, run_id.as_str()), (&StopReason::FinalAnswer, ""))
        }
        other => panic!("{other:?}"),
    }
    match &events[10] {
        RunEvent::Message { message, .. } => assert_eq!(message.text(), "a.txt\nb.txt"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_record_of_an_unknown_kind_or_shape_is_an_error_not_a_guess() {
    let unknown = RecordedEvent::now("from_a_later_version", json!({}));
    assert!(RunEvent::from_recorded(&unknown).is_err());
    let misshapen = RecordedEvent::now("step_started", json!({"step": "one"}));
    assert!(RunEvent::from_recorded(&misshapen).is_err());
    let not_an_object = RecordedEvent::now("step_started", Value::from(3));
    let error = RunEvent::from_recorded(&not_an_object).unwrap_err();
    assert!(error.to_string().contains("not an object"), "{error}");
}
