//! The step machine, fed random effect results and interruptions: whatever happens, steps open
//! and close in pairs, their numbers only grow, the run has exactly one outcome, and its history
//! stays well-formed.

use agentry_core::machine::{Ending, Interruption, Next, Opening, Rules, StepClosed, ToolsRan};
use agentry_core::{
    FinishReason, Message, ModelResponse, OutputSpec, PendingApproval, RunMachine, RunSnapshot,
    StopReason, ToolCall, ToolResult,
};
use proptest::prelude::*;
use serde_json::json;
use std::collections::HashSet;

/// One random choice of what an effect gives.
#[derive(Clone, Debug)]
struct Choice {
    /// Which kind of result, read modulo the kinds the effect has.
    kind: u8,
    /// How many tool calls a turn asks for (1..=3), or which call a person stops on.
    calls: u8,
    /// An interruption instead of the result: 0 none, 1 cancel, 2 deadline.
    interrupt: u8,
}

fn choice() -> impl Strategy<Value = Choice> {
    (
        any::<u8>(),
        1u8..=3,
        prop_oneof![8 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
    )
        .prop_map(|(kind, calls, interrupt)| Choice {
            kind,
            calls,
            interrupt,
        })
}

fn hook_stop() -> StopReason {
    StopReason::Hook {
        hook: "h".into(),
        reason: "r".into(),
    }
}

fn opening(c: &Choice, turn: usize) -> Opening {
    match c.kind % 7 {
        0 => Opening::Skip,
        1 => Opening::Stop(hook_stop()),
        2 => Opening::Turn(ModelResponse {
            finish_reason: FinishReason::Aborted("guard".into()),
            ..ModelResponse::text("cut")
        }),
        // Invalid for the output schema (an integer), sent back or failing the run.
        3 => Opening::Turn(ModelResponse::text("not a number")),
        4 => Opening::Turn(ModelResponse::text(turn.to_string())),
        _ => Opening::Turn(ModelResponse::tool_calls(
            // Ids that repeat across turns: the machine makes them unique.
            (0..c.calls)
                .map(|i| ToolCall::new(format!("c{i}"), "echo", &json!({})))
                .collect(),
        )),
    }
}

fn tools_ran(c: &Choice, m: &RunMachine) -> ToolsRan {
    let calls = m.pending_calls();
    let result = |call: &ToolCall| ToolResult::ok(&call.id, &call.name, "ok");
    match c.kind % 3 {
        0 => ToolsRan::Done(calls.iter().map(result).collect()),
        1 => {
            let (waiting, settled) = calls.split_at(1);
            ToolsRan::Paused {
                pending: waiting
                    .iter()
                    .map(|call| PendingApproval {
                        call_id: call.id.clone(),
                        tool: call.name.clone(),
                        input: json!({}),
                        reason: "ask".into(),
                    })
                    .collect(),
                settled: settled.iter().map(result).collect(),
            }
        }
        _ => {
            let stopped = &calls[usize::from(c.calls) % calls.len()];
            ToolsRan::Stopped {
                call_id: stopped.id.clone(),
                reason: "no".into(),
                results: calls.iter().map(result).collect(),
            }
        }
    }
}

fn closed(c: &Choice) -> StepClosed {
    match c.kind % 4 {
        0 => StepClosed {
            stop: Some(hook_stop()),
            veto: None,
        },
        1 => StepClosed {
            stop: None,
            veto: Some("go on".into()),
        },
        _ => StepClosed::default(),
    }
}

/// Every tool call of the history has exactly one result after it, except the calls of a turn
/// still pending.
fn well_formed(m: &RunMachine) -> Result<(), String> {
    let pending: HashSet<&str> = m.pending_calls().iter().map(|c| c.id.as_str()).collect();
    let mut open: Vec<String> = Vec::new();
    for message in m.messages.iter() {
        match message {
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                if !open.is_empty() {
                    return Err(format!("a turn came while {open:?} had no results"));
                }
                open = tool_calls.iter().map(|c| c.id.clone()).collect();
            }
            Message::Tool(result) => {
                let at = open.iter().position(|id| *id == result.call_id);
                let at = at.ok_or_else(|| format!("result of unknown call {}", result.call_id))?;
                open.remove(at);
            }
            _ => {}
        }
    }
    let open: HashSet<&str> = open.iter().map(String::as_str).collect();
    match open == pending {
        true => Ok(()),
        false => Err(format!(
            "calls without results {open:?}, pending {pending:?}"
        )),
    }
}

/// Drives a machine with `choices` until its outcome; checks the invariants at every effect.
fn drive(
    max_steps: u32,
    mut m: RunMachine,
    choices: &[Choice],
) -> Result<(Option<Ending>, RunMachine), TestCaseError> {
    let mut next = m.next_effect();
    let mut last_opened = m.step;
    let mut choices = choices.iter().cycle();
    let mut turns = 0;
    loop {
        prop_assert!(m.step <= max_steps, "step {} past the limit", m.step);
        well_formed(&m).map_err(TestCaseError::fail)?;
        let c = choices.next().expect("cycled");
        if c.interrupt != 0 && !matches!(next, Next::End(_) | Next::Fail(_)) {
            let before = m.step;
            let why = match c.interrupt {
                1 => Interruption::Cancelled,
                _ => Interruption::Deadline(hook_stop()),
            };
            let ending = m.interrupt(why.clone());
            match why {
                Interruption::Cancelled => prop_assert!(m.step + 1 >= before && m.step <= before),
                Interruption::Deadline(_) => prop_assert_eq!(m.step, before),
            }
            prop_assert!(m.is_over());
            prop_assert!(!ending.stop_hooks_ran);
            if !matches!(ending.stop, StopReason::Cancelled) {
                // A deadline leaves nothing pending.
                prop_assert!(m.pending_calls().is_empty());
            }
            well_formed(&m).map_err(TestCaseError::fail)?;
            return Ok((Some(ending), m));
        }
        next = match next {
            Next::OpenStep(step) => {
                prop_assert_eq!(step, last_opened + 1, "steps open in order");
                prop_assert_eq!(m.step, step - 1);
                last_opened = step;
                turns += 1;
                m.opened(opening(c, turns))
            }
            Next::RunTools { step, .. } => {
                prop_assert_eq!(step, m.step);
                prop_assert!(!m.pending_calls().is_empty());
                let ran = tools_ran(c, &m);
                m.tools_ran(ran)
            }
            Next::CloseStep { step, answer, save } => {
                prop_assert_eq!(step, m.step, "the step that closes is the one that opened");
                prop_assert!(m.pending_calls().is_empty());
                prop_assert_eq!(save, answer.is_none());
                let closed = closed(c);
                m.step_closed(if answer.is_none() {
                    StepClosed {
                        veto: None,
                        ..closed
                    }
                } else {
                    closed
                })
            }
            Next::Save => m.saved(),
            Next::End(ending) => {
                prop_assert!(m.is_over());
                if ending.stop == StopReason::FinalAnswer {
                    prop_assert!(ending.output.is_some() && ending.stop_hooks_ran);
                }
                if let StopReason::MaxSteps { limit } = ending.stop {
                    prop_assert_eq!((limit, m.step), (max_steps, max_steps));
                }
                if let StopReason::AwaitingApproval { pending } = &ending.stop {
                    prop_assert_eq!(pending.len(), 1);
                    prop_assert!(!m.pending_calls().is_empty());
                } else {
                    prop_assert!(m.pending_calls().is_empty());
                }
                // One outcome: the machine asks for nothing more.
                prop_assert!(matches!(m.next_effect(), Next::Fail(_)));
                return Ok((Some(ending), m));
            }
            Next::Fail(_) => {
                prop_assert!(m.is_over());
                return Ok((None, m));
            }
        };
    }
}

fn machine(max_steps: u32, retries: u32) -> RunMachine {
    let spec = OutputSpec::new(json!({"type": "integer"})).expect("a schema");
    let mut m = RunMachine::new();
    m.set_rules(Rules::new("a", max_steps).with_output(spec, retries));
    m.add_user("go");
    m
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_course_keeps_the_invariants(
        max_steps in 1u32..8,
        retries in 0u32..3,
        choices in proptest::collection::vec(choice(), 1..40),
    ) {
        drive(max_steps, machine(max_steps, retries), &choices)?;
    }

    #[test]
    fn a_paused_run_restored_from_its_checkpoint_goes_on_where_it_stopped(
        max_steps in 2u32..8,
        choices in proptest::collection::vec(choice(), 1..40),
    ) {
        let (ending, m) = drive(max_steps, machine(max_steps, 1), &choices)?;
        let paused = matches!(
            ending,
            Some(Ending { stop: StopReason::AwaitingApproval { .. }, .. })
        );
        if !paused {
            return Ok(());
        }
        let snapshot = RunSnapshot {
            messages: m.messages.clone(),
            step: m.step,
            model_calls: m.model_calls,
            output_attempts: m.output_attempts,
            pending_tool_calls: m.pending_calls().to_vec(),
            settled_results: m.settled.clone(),
            ..RunSnapshot::new("r", "a")
        };
        let mut resumed = RunMachine::restore(&snapshot);
        let spec = OutputSpec::new(json!({"type": "integer"})).expect("a schema");
        resumed.set_rules(Rules::new("a", max_steps).with_output(spec, 1));
        let step = m.step;
        // The first effect of the resumed run is the paused turn's calls, in its step.
        let mut probe = resumed.clone();
        let first = probe.next_effect();
        let resumes_its_calls = matches!(first, Next::RunTools { step: s, save_turn: false } if s == step);
        prop_assert!(resumes_its_calls);
        drive(max_steps, resumed, &choices)?;
    }
}
