use super::*;
use crate::agent::OutputSpec;
use crate::{Error, FinishReason, PendingApproval, Usage};
use serde_json::json;

fn machine(max_steps: u32) -> RunMachine {
    let mut m = RunMachine::new();
    m.set_rules(Rules::new("a", max_steps));
    m.add_user("go");
    m
}

fn call(id: &str) -> ToolCall {
    ToolCall::new(id, "echo", &json!({"text": "x"}))
}

fn tools(ids: &[&str]) -> Opening {
    Opening::Turn(ModelResponse::tool_calls(
        ids.iter().map(|id| call(id)).collect(),
    ))
}

fn results(m: &RunMachine) -> Vec<ToolResult> {
    m.pending_calls()
        .iter()
        .map(|c| ToolResult::ok(&c.id, &c.name, "x"))
        .collect()
}

#[track_caller]
fn ending(next: Next) -> Ending {
    match next {
        Next::End(ending) => ending,
        other => panic!("expected the end, got {other:?}"),
    }
}

#[test]
fn a_final_answer_closes_its_step_unsaved_and_ends_with_stop_hooks_ran() {
    let mut m = machine(5);
    assert!(matches!(m.next_effect(), Next::OpenStep(1)));
    assert_eq!(
        (m.step, m.current_step()),
        (0, 1),
        "an opening step does not count yet"
    );
    let next = m.opened(Opening::Turn(ModelResponse::text("done")));
    assert!(matches!(
        &next,
        Next::CloseStep { step: 1, answer: Some(a), save: false } if a == &json!("done")
    ));
    assert_eq!(m.added().count(), 1, "the turn");
    let end = ending(m.step_closed(StepClosed::default()));
    assert_eq!(end.stop, StopReason::FinalAnswer);
    assert_eq!(end.output, Some(json!("done")));
    assert!(end.stop_hooks_ran);
    assert_eq!(m.step, 1);
    assert!(m.is_over());
}

#[test]
fn the_step_limit_is_exact() {
    let mut m = machine(2);
    assert!(matches!(m.next_effect(), Next::OpenStep(1)));
    assert!(matches!(
        m.opened(Opening::Skip),
        Next::CloseStep {
            step: 1,
            save: true,
            ..
        }
    ));
    assert!(matches!(
        m.step_closed(StepClosed::default()),
        Next::OpenStep(2)
    ));
    assert!(matches!(
        m.opened(tools(&["c1"])),
        Next::RunTools {
            step: 2,
            save_turn: true
        }
    ));
    let r = results(&m);
    assert!(matches!(
        m.tools_ran(ToolsRan::Done(r)),
        Next::CloseStep { step: 2, .. }
    ));
    let end = ending(m.step_closed(StepClosed::default()));
    assert_eq!(end.stop, StopReason::MaxSteps { limit: 2 });
    assert!(!end.stop_hooks_ran);
    assert_eq!(m.step, 2);
}

#[test]
fn a_step_stopped_before_it_opened_does_not_count() {
    let mut m = machine(5);
    let _ = m.next_effect();
    let stop = StopReason::Hook {
        hook: "h".into(),
        reason: "enough".into(),
    };
    let end = ending(m.opened(Opening::Stop(stop.clone())));
    assert_eq!(end.stop, stop);
    assert_eq!(m.step, 0);
}

#[test]
fn an_after_step_stop_ends_the_run_but_not_a_final_answer() {
    let stop = StopReason::Hook {
        hook: "h".into(),
        reason: "r".into(),
    };
    let mut m = machine(5);
    let _ = m.next_effect();
    let _ = m.opened(Opening::Skip);
    let closed = StepClosed {
        stop: Some(stop.clone()),
        veto: None,
    };
    assert_eq!(ending(m.step_closed(closed.clone())).stop, stop);

    let mut m = machine(5);
    let _ = m.next_effect();
    let _ = m.opened(Opening::Turn(ModelResponse::text("x")));
    assert_eq!(ending(m.step_closed(closed)).stop, StopReason::FinalAnswer);
}

#[test]
fn a_veto_adds_its_message_saves_and_opens_the_next_step() {
    let mut m = machine(5);
    let _ = m.next_effect();
    let _ = m.opened(Opening::Turn(ModelResponse::text("x")));
    let next = m.step_closed(StepClosed {
        stop: None,
        veto: Some("not yet".into()),
    });
    assert!(matches!(next, Next::Save));
    assert_eq!(m.added().map(|a| a.text()).collect::<Vec<_>>(), ["not yet"]);
    assert!(matches!(m.saved(), Next::OpenStep(2)));
}

#[test]
fn an_aborted_turn_closes_its_step_saved_and_ends_aborted() {
    let mut m = machine(5);
    let _ = m.next_effect();
    let response = ModelResponse {
        finish_reason: FinishReason::Aborted("guard".into()),
        ..ModelResponse::text("partial")
    };
    assert!(matches!(
        m.opened(Opening::Turn(response)),
        Next::CloseStep {
            save: true,
            answer: None,
            ..
        }
    ));
    let stop = StopReason::Hook {
        hook: "h".into(),
        reason: "ignored".into(),
    };
    let end = ending(m.step_closed(StepClosed {
        stop: Some(stop),
        veto: None,
    }));
    assert_eq!(
        end.stop,
        StopReason::Aborted {
            reason: "guard".into()
        }
    );
    assert_eq!(m.step, 1);
}

#[test]
fn invalid_answers_are_sent_back_then_fail_the_run() {
    let spec = OutputSpec::new(json!({"type": "integer"})).unwrap();
    let mut m = machine(10);
    m.set_rules(Rules::new("counter", 10).with_output(spec, 1));
    let _ = m.next_effect();
    assert!(matches!(
        m.opened(Opening::Turn(ModelResponse::text("x"))),
        Next::CloseStep {
            answer: None,
            save: true,
            ..
        }
    ));
    assert_eq!(m.added().count(), 2, "the turn and the feedback");
    assert!(matches!(
        m.step_closed(StepClosed::default()),
        Next::OpenStep(2)
    ));
    match m.opened(Opening::Turn(ModelResponse::text("y"))) {
        Next::Fail(Error::InvalidOutput {
            agent, attempts, ..
        }) => assert_eq!((agent.as_str(), attempts), ("counter", 2)),
        other => panic!("expected a failure, got {other:?}"),
    }
    assert!(m.is_over());
}

#[test]
fn a_valid_structured_answer_is_the_output() {
    let spec = OutputSpec::new(json!({"type": "integer"})).unwrap();
    let mut m = machine(10);
    m.set_rules(Rules::new("counter", 10).with_output(spec, 0));
    let _ = m.next_effect();
    let next = m.opened(Opening::Turn(ModelResponse::text("7")));
    assert!(matches!(next, Next::CloseStep { answer: Some(v), .. } if v == json!(7)));
}

#[test]
fn a_paused_turn_keeps_its_step_open_and_resumes_into_its_calls() {
    let mut m = machine(5);
    let _ = m.next_effect();
    let _ = m.opened(tools(&["c1", "c2"]));
    let done = vec![ToolResult::ok("c1", "echo", "x")];
    let pending = vec![PendingApproval {
        call_id: "c2".into(),
        tool: "echo".into(),
        input: json!({}),
        reason: "ask".into(),
    }];
    let end = ending(m.tools_ran(ToolsRan::Paused {
        pending: pending.clone(),
        settled: done.clone(),
    }));
    assert_eq!(end.stop, StopReason::AwaitingApproval { pending });
    assert_eq!(m.step, 1);
    // What a checkpoint keeps, restored: the machine waits for the turn's calls.
    let snapshot = RunSnapshot {
        messages: m.messages.clone(),
        step: m.step,
        pending_tool_calls: m.pending_calls().to_vec(),
        settled_results: m.settled.clone(),
        ..RunSnapshot::new("r", "a")
    };
    let mut resumed = RunMachine::restore(&snapshot);
    resumed.set_rules(Rules::new("a", 5));
    assert!(matches!(
        resumed.next_effect(),
        Next::RunTools {
            step: 1,
            save_turn: false
        }
    ));
    assert_eq!(resumed.settled_result("c1"), Some(&done[0]));
    let r = results(&resumed);
    assert!(matches!(
        resumed.tools_ran(ToolsRan::Done(r)),
        Next::CloseStep { step: 1, .. }
    ));
    assert!(matches!(
        resumed.step_closed(StepClosed::default()),
        Next::OpenStep(2)
    ));
}

#[test]
fn a_rejection_with_a_stop_closes_the_step_and_ends_stopped_by_a_person() {
    let mut m = machine(5);
    let _ = m.next_effect();
    let _ = m.opened(tools(&["c1"]));
    let r = results(&m);
    let next = m.tools_ran(ToolsRan::Stopped {
        call_id: "c1".into(),
        reason: "no".into(),
        results: r,
    });
    assert!(matches!(
        next,
        Next::CloseStep {
            step: 1,
            save: true,
            ..
        }
    ));
    let end = ending(m.step_closed(StepClosed::default()));
    assert!(matches!(end.stop, StopReason::StoppedByHuman { .. }));
    assert!(m.pending_calls().is_empty());
}

#[test]
fn a_cancellation_takes_back_a_step_that_had_not_closed() {
    // While the step opens: it never counted.
    let mut m = machine(5);
    let _ = m.next_effect();
    assert_eq!(
        m.interrupt(Interruption::Cancelled).stop,
        StopReason::Cancelled
    );
    assert_eq!(m.step, 0);
    // While its calls run, or it closes: it is taken back.
    for close in [false, true] {
        let mut m = machine(5);
        let _ = m.next_effect();
        let _ = m.opened(tools(&["c1"]));
        if close {
            let r = results(&m);
            let _ = m.tools_ran(ToolsRan::Done(r));
        }
        assert_eq!(m.step, 1);
        let _ = m.interrupt(Interruption::Cancelled);
        assert_eq!(m.step, 0, "closing: {close}");
    }
    // Between steps: the steps done stay done.
    let mut m = machine(5);
    let _ = m.next_effect();
    let _ = m.opened(Opening::Skip);
    let _ = m.step_closed(StepClosed::default());
    let _ = m.interrupt(Interruption::Cancelled);
    assert_eq!(m.step, 1);
}

#[test]
fn a_deadline_keeps_an_opened_step_and_closes_its_calls() {
    let stop = StopReason::Hook {
        hook: "guard".into(),
        reason: "wall time".into(),
    };
    let mut m = machine(5);
    let _ = m.next_effect();
    let end = m.interrupt(Interruption::Deadline(stop.clone()));
    assert_eq!(
        (end.stop, m.step),
        (stop.clone(), 0),
        "still opening: it never counted"
    );

    let mut m = machine(5);
    let _ = m.next_effect();
    let _ = m.opened(tools(&["c1", "c2"]));
    m.settled = vec![ToolResult::ok("c1", "echo", "kept")];
    let _ = m.interrupt(Interruption::Deadline(stop));
    assert_eq!(m.step, 1);
    let added: Vec<_> = m.added().cloned().collect();
    assert_eq!(added.len(), 2);
    assert_eq!(added[0].text(), "kept");
    assert!(added[1].text().contains("wall time"), "{}", added[1].text());
    assert!(m.pending_calls().is_empty());
}

#[test]
fn a_result_fed_out_of_order_fails_the_run() {
    let mut m = machine(5);
    let _ = m.next_effect();
    let next = m.tools_ran(ToolsRan::Done(Vec::new()));
    assert!(matches!(&next, Next::Fail(e) if e.to_string().contains("out of order")));
    assert!(m.is_over());
}

#[test]
fn usage_of_rejected_responses_counts() {
    let mut m = machine(5);
    m.reject_response(Usage {
        input_tokens: 3,
        ..Usage::default()
    });
    assert_eq!((m.usage.input_tokens, m.retried_usage.input_tokens), (3, 3));
}

#[test]
fn call_ids_are_unique_in_a_run_and_kept_when_they_are() {
    let mut m = RunMachine::new();
    let ids = |m: &Arc<Message>| {
        m.tool_calls()
            .iter()
            .map(|c| c.id.clone())
            .collect::<Vec<_>>()
    };
    // A provider's own ids are kept; an empty one and a repeat within the turn are not.
    let (t1, _) = m.accept_response(ModelResponse::tool_calls(vec![
        call("toolu_1"),
        call(""),
        call("toolu_1"),
    ]));
    assert_eq!(ids(&t1), ["toolu_1", "call_1_1", "call_1_2"]);
    m.accept_tool_results(Vec::new());
    // A provider that numbers calls per turn repeats `call_0`: the repeat gets its own.
    let (t2, _) = m.accept_response(ModelResponse::tool_calls(vec![call("call_0")]));
    let (t3, _) = m.accept_response(ModelResponse::tool_calls(vec![call("call_0")]));
    assert_eq!(
        (ids(&t2), ids(&t3)),
        (vec!["call_0".into()], vec!["call_3_0".into()])
    );
    // A restored machine knows the ids of its history.
    let mut restored = RunMachine::new();
    restored.set_history(m.messages.clone());
    restored.model_calls = m.model_calls;
    let (t4, _) = restored.accept_response(ModelResponse::tool_calls(vec![call("toolu_1")]));
    assert_eq!(ids(&t4), ["call_4_0"]);
}

#[test]
fn a_step_s_usage_is_what_its_model_calls_used_since_it_opened() {
    let mut m = machine(5);
    let turn = |usage: Usage, response: ModelResponse| ModelResponse { usage, ..response };
    assert!(matches!(m.next_effect(), Next::OpenStep(1)));
    // A response an AfterModel hook rejected counts in its step, then the accepted turn.
    m.reject_response(Usage::new(2, 1));
    let response = ModelResponse::tool_calls(vec![call("c1")]);
    let _ = m.opened(Opening::Turn(turn(Usage::new(10, 5), response)));
    assert_eq!(m.step_usage(), Usage::new(12, 6));
    let _ = m.tools_ran(ToolsRan::Done(results(&m)));
    assert!(matches!(
        m.step_closed(StepClosed::default()),
        Next::OpenStep(2)
    ));
    // The next step counts from zero; the run's usage is the sum.
    assert_eq!(m.step_usage(), Usage::default());
    let _ = m.opened(Opening::Turn(turn(
        Usage::new(7, 3),
        ModelResponse::text("done"),
    )));
    assert_eq!(m.step_usage(), Usage::new(7, 3));
    assert_eq!(m.usage, Usage::new(19, 9));
}
