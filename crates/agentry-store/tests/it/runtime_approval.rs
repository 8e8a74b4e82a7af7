//! Human approval through the runtime, on real stores (SQLite, and Postgres when the test server
//! is reachable): a run pauses with its pending calls, and a new runtime on a new store instance
//! (as another process would open it) continues it with each kind of decision; bad requests are
//! refused and change nothing; hooks and policies ask for or give approval; sessions continue.

use crate::support;

use crate::support::{Backend, results_in};
use agentry::builtins::{Recorder, ToolPolicy};
use agentry::hooks::EventKind;
use agentry::prelude::*;
use agentry::{Decision, PendingApproval, RunQuery, RunStatus, RunStore};
use agentry::{Message, RunOptions, ScriptedTurn, hooks::BeforeTool};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Deserialize, JsonSchema)]
struct Days {
    days: u32,
}

/// Counts how often each tool ran.
#[derive(Clone, Default)]
struct Ran {
    reads: Arc<AtomicUsize>,
    deletes: Arc<AtomicUsize>,
}

/// The number of tool results in a request: the model's script is keyed on it, so a model made
/// anew (as in a new process) answers the same history the same way.
/// Reads the logs and deletes old ones in one turn (a call that needs approval beside one that
/// does not), then reports what the last tool result said.
fn cleaner(ran: &Ran, deletes_need_approval: bool) -> Agent {
    let model = ScriptedModel::from_fn(|_, req| match results_in(req) {
        0 => ScriptedTurn::new()
            .with_tool_call_id("r1", "read_logs", json!({"days": 30}))
            .with_tool_call_id("d1", "delete_logs", json!({"days": 30})),
        _ => ScriptedTurn::text(format!(
            "done: {}",
            req.messages.last().map(Message::text).unwrap_or_default()
        )),
    });
    let reads = ran.reads.clone();
    let read = tool("read_logs", "Reads logs.", move |a: Days, _c: ToolCtx| {
        reads.fetch_add(1, Ordering::SeqCst);
        async move { Ok(format!("{} days of logs", a.days)) }
    });
    let deletes = ran.deletes.clone();
    let delete = tool(
        "delete_logs",
        "Deletes old logs.",
        move |a: Days, _c: ToolCtx| {
            deletes.fetch_add(1, Ordering::SeqCst);
            async move { Ok(format!("deleted logs older than {} days", a.days)) }
        },
    );
    let delete = if deletes_need_approval {
        delete.needs_approval()
    } else {
        delete
    };
    Agent::builder("cleaner")
        .model(model)
        .tool(read)
        .tool(delete)
        .build()
        .unwrap()
}

/// Runs the cleaner until it pauses; returns its run id and the pending calls.
async fn paused(backend: &Backend, ran: &Ran) -> (String, Vec<PendingApproval>) {
    let runtime = Runtime::new().store(backend.open().await);
    let out = runtime
        .run(&cleaner(ran, true), "Clean up the logs.")
        .await
        .unwrap();
    let StopReason::AwaitingApproval { pending } = out.stop else {
        panic!("{}: the run did not pause: {:?}", backend.name(), out.stop);
    };
    (out.run_id, pending)
}

#[tokio::test]
async fn a_paused_run_continues_in_a_new_runtime_when_approved() {
    for backend in Backend::all().await {
        let ran = Ran::default();
        let (run_id, pending) = paused(&backend, &ran).await;
        assert_eq!(
            pending,
            [PendingApproval {
                call_id: "d1".into(),
                tool: "delete_logs".into(),
                input: json!({"days": 30}),
                reason: "`delete_logs` needs approval".into(),
            }]
        );
        // The call that needs no approval ran; the other waits.
        assert_eq!(ran.reads.load(Ordering::SeqCst), 1);
        assert_eq!(ran.deletes.load(Ordering::SeqCst), 0);

        // What the store shows while it waits.
        let store = backend.open().await;
        let waiting = store
            .list(&RunQuery::all().status(RunStatus::AwaitingApproval))
            .await
            .unwrap();
        assert_eq!(waiting.len(), 1);
        assert_eq!(waiting[0].run_id, run_id);

        // Another runtime, on another store instance, approves.
        let recorder = Recorder::new();
        let out = Runtime::new()
            .store(store.clone())
            .with(recorder.clone())
            .decide(&cleaner(&ran, true), &run_id, [Decision::approve("d1")])
            .await
            .unwrap();
        assert_eq!(
            out.output.as_deref(),
            Some("done: deleted logs older than 30 days")
        );
        assert_eq!(ran.reads.load(Ordering::SeqCst), 1, "read_logs ran once");
        assert_eq!(ran.deletes.load(Ordering::SeqCst), 1);
        assert_eq!(out.stop, StopReason::FinalAnswer);
        // The results are in call order, the settled one kept from before the pause.
        let results: Vec<_> = out
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool(r) => Some(r.call_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(results, ["r1", "d1"]);
        let resolved = recorder.of(EventKind::ApprovalResolved);
        assert_eq!(resolved.len(), 1, "{:?}", recorder.kinds());

        // The store: finished, with the whole story in its event history.
        let stored = store.load(&run_id).await.unwrap().unwrap();
        assert_eq!(stored.snapshot.status(), RunStatus::Finished);
        let kinds: Vec<String> = store
            .events(&run_id)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.event.kind)
            .collect();
        let at = |k: &str| {
            kinds
                .iter()
                .position(|x| x == k)
                .unwrap_or_else(|| panic!("no {k} in {kinds:?}"))
        };
        assert!(at("run_started") < at("awaiting_approval"), "{kinds:?}");
        assert!(
            at("awaiting_approval") < at("approval_resolved"),
            "{kinds:?}"
        );
        let last_result = kinds.iter().rposition(|k| k == "tool_finished").unwrap();
        assert!(at("approval_resolved") < last_result, "{kinds:?}");
        assert_eq!(
            kinds.iter().filter(|k| *k == "tool_finished").count(),
            2,
            "{kinds:?}"
        );
    }
}

#[tokio::test]
async fn a_rejected_call_never_runs_and_the_model_hears_the_reason() {
    for backend in Backend::all().await {
        let ran = Ran::default();
        let (run_id, _) = paused(&backend, &ran).await;
        let out = Runtime::new()
            .store(backend.open().await)
            .decide(
                &cleaner(&ran, true),
                &run_id,
                [Decision::reject("d1", "keep logs for the audit")],
            )
            .await
            .unwrap();
        assert_eq!(ran.deletes.load(Ordering::SeqCst), 0);
        assert_eq!(
            out.output.as_deref(),
            Some("done: the call was rejected: keep logs for the audit")
        );
    }
}

#[tokio::test]
async fn reject_and_stop_ends_the_run_stopped_by_a_person() {
    for backend in Backend::all().await {
        let ran = Ran::default();
        let (run_id, _) = paused(&backend, &ran).await;
        let recorder = Recorder::new();
        let store = backend.open().await;
        let out = Runtime::new()
            .store(store.clone())
            .with(recorder.clone())
            .decide(
                &cleaner(&ran, true),
                &run_id,
                [Decision::reject_and_stop("d1", "wrong server")],
            )
            .await
            .unwrap();
        assert_eq!(
            out.stop,
            StopReason::StoppedByHuman {
                call_id: "d1".into(),
                reason: "wrong server".into()
            }
        );
        assert_eq!(ran.deletes.load(Ordering::SeqCst), 0);
        assert_eq!(out.model_calls, 1, "no model turn after the stop");
        assert_eq!(recorder.of(EventKind::StoppedByHuman).len(), 1);
        let stored = store.load(&run_id).await.unwrap().unwrap();
        assert_eq!(stored.snapshot.status(), RunStatus::Finished);
    }
}

#[tokio::test]
async fn several_pending_calls_of_one_turn_are_decided_together() {
    for backend in Backend::all().await {
        let deletes = Arc::new(AtomicUsize::new(0));
        let d = deletes.clone();
        let agent = Agent::builder("cleaner")
            .model(ScriptedModel::from_fn(|_, req| match results_in(req) {
                0 => ScriptedTurn::new()
                    .with_tool_call_id("a", "delete_logs", json!({"days": 30}))
                    .with_tool_call_id("b", "delete_logs", json!({"days": 1})),
                _ => ScriptedTurn::text("done"),
            }))
            .tool(
                tool("delete_logs", "Deletes.", move |a: Days, _c: ToolCtx| {
                    d.fetch_add(1, Ordering::SeqCst);
                    async move { Ok(format!("deleted {}", a.days)) }
                })
                .needs_approval(),
            )
            .build()
            .unwrap();
        let runtime = Runtime::new().store(backend.open().await);
        let out = runtime.run(&agent, "Clean.").await.unwrap();
        let StopReason::AwaitingApproval { pending } = &out.stop else {
            panic!("{:?}", out.stop)
        };
        assert_eq!(pending.len(), 2);
        let out = runtime
            .decide(
                &agent,
                &out.run_id,
                [Decision::approve("a"), Decision::reject("b", "too recent")],
            )
            .await
            .unwrap();
        assert_eq!(deletes.load(Ordering::SeqCst), 1);
        let contents: Vec<_> = out
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool(r) => Some(r.content.as_text().unwrap_or_default()),
                _ => None,
            })
            .collect();
        assert_eq!(
            contents,
            ["deleted 30", "the call was rejected: too recent"]
        );
    }
}

#[tokio::test]
async fn bad_requests_get_clear_errors_and_change_nothing() {
    for backend in Backend::all().await {
        let ran = Ran::default();
        let (run_id, _) = paused(&backend, &ran).await;
        let store = backend.open().await;
        let runtime = Runtime::new().store(store.clone());
        let agent = cleaner(&ran, true);
        let before = store.load(&run_id).await.unwrap().unwrap();

        let cases: Vec<(Vec<Decision>, &str)> = vec![
            (
                vec![Decision::approve("zz")],
                "has no pending call `zz`; the pending calls are `delete_logs` (d1)",
            ),
            (
                vec![Decision::approve("d1"), Decision::reject("d1", "no")],
                "call `d1` is decided twice",
            ),
            (
                vec![],
                "`delete_logs` (d1) not decided; decide every pending call",
            ),
        ];
        for (decisions, expected) in cases {
            let err = runtime
                .decide(&agent, &run_id, decisions)
                .await
                .unwrap_err();
            assert!(
                err.to_string().contains(expected),
                "{}: {err}",
                backend.name()
            );
        }
        let err = runtime
            .decide(&agent, "no-such-run", [Decision::approve("d1")])
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("the store has no run with this id"),
            "{err}"
        );
        let err = runtime.resume(&agent, &run_id).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("it waits for approval of `delete_logs` (d1)"),
            "{err}"
        );
        assert_eq!(
            store.load(&run_id).await.unwrap().unwrap(),
            before,
            "nothing changed"
        );
        assert_eq!(ran.deletes.load(Ordering::SeqCst), 0);

        // The valid decision still works; deciding again is refused.
        runtime
            .decide(&agent, &run_id, [Decision::approve("d1")])
            .await
            .unwrap();
        let err = runtime
            .decide(&agent, &run_id, [Decision::approve("d1")])
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("it is not waiting for approval (it is finished)"),
            "{err}"
        );
        assert_eq!(ran.deletes.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn hooks_and_policies_ask_for_approval_and_hooks_may_give_it() {
    let backend = Backend::Sqlite(support::TempDir::new());
    let ran = Ran::default();
    // A policy asks for approval of `delete_*`; an auto-approver lets short retention through.
    let policy = ToolPolicy::allow_by_default()
        .require_approval("delete_*")
        .build()
        .unwrap();
    let auto = on::approval_requested(
        |mut ev: agentry::hooks::ApprovalRequested, _ctx| async move {
            if ev.pending().input["days"].as_u64() == Some(30) {
                ev.approve();
            }
            Ok(ev)
        },
    )
    .named("auto-approver");
    let recorder = Recorder::new();
    let out = Runtime::new()
        .store(backend.open().await)
        .with(policy)
        .with(auto)
        .with(recorder.clone())
        .run(&cleaner(&ran, false), "Clean.")
        .await
        .unwrap();
    assert_eq!(out.stop, StopReason::FinalAnswer, "approved by the hook");
    assert_eq!(ran.deletes.load(Ordering::SeqCst), 1);
    let requested = recorder.of(EventKind::ApprovalRequested);
    assert_eq!(requested.len(), 1);
    assert_eq!(recorder.of(EventKind::ApprovalResolved).len(), 1);

    // A BeforeTool hook asks; nobody answers: the run pauses with the hook's reason.
    let asking = on::before_tool(|mut ev: BeforeTool, _ctx| async move {
        if ev.name() == "read_logs" {
            ev.require_approval("reading logs needs a second pair of eyes");
        }
        Ok(ev)
    });
    let out = Runtime::new()
        .store(backend.open().await)
        .with(asking)
        .run(&cleaner(&ran, false), "Clean.")
        .await
        .unwrap();
    let StopReason::AwaitingApproval { pending } = out.stop else {
        panic!("{:?}", out.stop)
    };
    assert_eq!(pending[0].call_id, "r1");
    assert_eq!(
        pending[0].reason,
        "reading logs needs a second pair of eyes"
    );
}

#[tokio::test]
async fn runs_of_a_session_continue_its_conversation() {
    for backend in Backend::all().await {
        let model = ScriptedModel::from_fn(|n, _| ScriptedTurn::text(format!("answer {n}")))
            .record_requests(true);
        let agent = Agent::builder("chat").model(model.clone()).build().unwrap();
        let runtime = Runtime::new().store(backend.open().await);
        let first = runtime
            .run(&agent, "My name is Ada.")
            .with(RunOptions::new().session("s-1"))
            .await
            .unwrap();
        // A new runtime (another process) continues the session from the store.
        let again = Runtime::new().store(backend.open().await);
        let second = again
            .run(&agent, "What is my name?")
            .with(RunOptions::new().session("s-1"))
            .await
            .unwrap();
        let texts: Vec<String> = second
            .messages
            .iter()
            .map(|m| m.text().into_owned())
            .collect();
        assert_eq!(
            texts,
            [
                "My name is Ada.",
                "answer 1",
                "What is my name?",
                "answer 2"
            ]
        );
        assert_ne!(first.run_id, second.run_id);
        assert_eq!(model.requests()[1].messages.len(), 3);
        // Another session starts afresh.
        let other = again
            .run(&agent, "Hi")
            .with(RunOptions::new().session("s-2"))
            .await
            .unwrap();
        assert_eq!(other.messages.len(), 2);

        // A session whose last run waits for approval cannot go on until it is decided.
        let ran = Ran::default();
        let paused = again
            .run(&cleaner(&ran, true), "Clean.")
            .with(RunOptions::new().session("s-3"))
            .await
            .unwrap();
        assert!(paused.stop.is_paused());
        let err = again
            .run(&agent, "And now?")
            .with(RunOptions::new().session("s-3"))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("cannot continue session `s-3`: its last run")
                && err.to_string().contains("waits for approval"),
            "{err}"
        );
    }
}
