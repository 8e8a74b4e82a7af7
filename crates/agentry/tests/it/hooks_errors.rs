//! Failing hooks: an error, a panic or a timeout fails the run by default, with an error naming
//! the hook and the event; an advisory hook's failure is reported (HookFailed) and the run goes
//! on with the event as it was before that hook. Meta events report every hook's execution.

use crate::common::*;
use agentry::ModelRequest;
use agentry::RunOutput;
use agentry::hooks::*;
use agentry::prelude::*;
use std::future::Ready;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const LIMIT: Duration = Duration::from_millis(50);

#[derive(Clone, Copy, Debug)]
enum Mode {
    Error,
    Panic,
    Timeout,
}

const MODES: [Mode; 3] = [Mode::Error, Mode::Panic, Mode::Timeout];

/// A BeforeTool hook named `flaky` that changes the input to Atlantis, then fails per `mode`.
fn flaky(mode: Mode) -> HookRegistration {
    on::before_tool(move |mut ev, _ctx| async move {
        ev.input = json!({"city": "Atlantis"});
        match mode {
            Mode::Error => Err(BoxError::from("flaky failed")),
            Mode::Panic => panic!("flaky panicked"),
            Mode::Timeout => {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok(ev)
            }
        }
    })
    .named("flaky")
    .timeout(LIMIT)
}

fn failure_of(mode: Mode) -> HookFailure {
    match mode {
        Mode::Error => HookFailure::Error("flaky failed".into()),
        Mode::Panic => HookFailure::Panic("flaky panicked".into()),
        Mode::Timeout => HookFailure::Timeout(LIMIT),
    }
}

type Durations = Arc<Mutex<Vec<(String, Duration)>>>;

/// A runtime whose hooks record every meta event into `meta` and the durations HookFinished and
/// HookFailed report into `durations`.
fn observed_runtime(meta: &Log, durations: &Durations) -> Runtime {
    let (d1, d2) = (durations.clone(), durations.clone());
    Runtime::new()
        .with(Recorder::new(meta).events(Events::META))
        .with(on::hook_finished(move |ev, _ctx| {
            d1.lock()
                .unwrap()
                .push((format!("finished {}", ev.hook()), ev.duration()));
            std::future::ready(Ok(ev))
        }))
        .with(on::hook_failed(move |ev, _ctx| {
            d2.lock()
                .unwrap()
                .push((format!("failed {}", ev.hook()), ev.duration()));
            std::future::ready(Ok(ev))
        }))
}

struct Outcome {
    result: Result<RunOutput<(), String>, Error>,
    tool: Vec<String>,
    seen_by_last: Vec<String>,
    meta: Vec<String>,
    durations: Vec<(String, Duration)>,
    run_errors: Vec<String>,
}

/// Runs an agent whose BeforeTool hooks are `first` (input → Rome), `reg`, and `last` (records
/// the input it sees), with meta observers on the runtime and a RunFailed observer.
async fn run_with(reg: HookRegistration) -> Outcome {
    let (tool_log, seen, meta, run_errors) = (new_log(), new_log(), new_log(), new_log());
    let durations = Durations::default();
    let (s, e) = (seen.clone(), run_errors.clone());
    let model = ScriptedModel::new()
        .tool_call("get_weather", json!({"city": "Paris"}))
        .text("Enjoy.");
    let agent = Agent::builder("planner")
        .model(model)
        .tool(weather(&tool_log, &Counter::default()))
        .with(
            on::before_tool(|mut ev, _ctx| async move {
                ev.input = json!({"city": "Rome"});
                Ok(ev)
            })
            .named("first"),
        )
        .with(reg)
        .with(
            on::before_tool(move |ev, _ctx| {
                push(&s, ev.input["city"].as_str().unwrap_or("?"));
                std::future::ready(Ok(ev))
            })
            .named("last"),
        )
        .with(
            on::run_failed(move |ev, _ctx| {
                push(&e, ev.error().to_string());
                std::future::ready(Ok(ev))
            })
            .named("on-error"),
        )
        .build()
        .unwrap();

    let result = observed_runtime(&meta, &durations)
        .run(&agent, "Paris?")
        .await;
    let durations = durations.lock().unwrap().clone();
    Outcome {
        result,
        tool: entries(&tool_log),
        seen_by_last: entries(&seen),
        meta: entries(&meta),
        durations,
        run_errors: entries(&run_errors),
    }
}

#[tokio::test]
async fn a_failing_hook_fails_the_run_with_an_error_naming_the_hook_and_the_event() {
    for mode in MODES {
        let out = run_with(flaky(mode)).await;

        let expected = HookError {
            hook: "flaky".into(),
            event: EventKind::BeforeTool,
            failure: failure_of(mode),
        };
        match &out.result {
            Err(Error::Hook(e)) => assert_eq!(e, &expected, "{mode:?}"),
            Err(other) => panic!("{mode:?}: expected Error::Hook, got {other:?}"),
            Ok(o) => panic!("{mode:?}: expected a failed run, got {:?}", o.output),
        }
        let message = out.result.as_ref().unwrap_err().to_string();
        assert!(
            message.starts_with("hook `flaky` failed on BeforeTool: "),
            "{mode:?}: {message}"
        );
        assert!(out.tool.is_empty(), "{mode:?}: the tool must not run");
        assert!(out.seen_by_last.is_empty(), "{mode:?}: the chain stops");
        assert_eq!(out.run_errors, [message.as_str()], "{mode:?}");
        assert_eq!(
            out.meta,
            [
                "HookStarted:first:BeforeTool",
                "HookFinished:first:BeforeTool",
                "HookStarted:flaky:BeforeTool",
                "HookFailed:flaky:BeforeTool:fatal",
                "HookStarted:on-error:RunFailed",
                "HookFinished:on-error:RunFailed",
            ],
            "{mode:?}"
        );
        let names: Vec<&str> = out.durations.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["finished first", "failed flaky", "finished on-error"],
            "{mode:?}"
        );
    }
}

#[tokio::test]
async fn an_advisory_hook_failure_is_reported_and_the_run_goes_on_with_the_event_from_before_it() {
    for mode in MODES {
        let out = run_with(flaky(mode).advisory()).await;

        let run = match out.result {
            Ok(run) => run,
            Err(e) => panic!("{mode:?}: an advisory failure must not fail the run: {e}"),
        };
        assert_eq!(run.output.as_deref(), Some("Enjoy."), "{mode:?}");
        assert_eq!(run.stop, StopReason::FinalAnswer, "{mode:?}");
        // `first` changed Paris to Rome; `flaky` changed it to Atlantis and failed: the next hook
        // and the tool see Rome.
        assert_eq!(out.seen_by_last, ["Rome"], "{mode:?}");
        assert_eq!(out.tool, ["tool:Rome"], "{mode:?}");
        assert!(out.run_errors.is_empty(), "{mode:?}");
        assert_eq!(
            out.meta,
            [
                "HookStarted:first:BeforeTool",
                "HookFinished:first:BeforeTool",
                "HookStarted:flaky:BeforeTool",
                "HookFailed:flaky:BeforeTool:advisory",
                "HookStarted:last:BeforeTool",
                "HookFinished:last:BeforeTool",
            ],
            "{mode:?}"
        );
        let names: Vec<&str> = out.durations.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["finished first", "failed flaky", "finished last"],
            "{mode:?}"
        );
        if let Mode::Timeout = mode {
            let flaky = out.durations[1].1;
            assert!(flaky >= LIMIT, "{flaky:?}");
        }
    }
}

#[tokio::test]
async fn hook_failed_reports_the_error_the_duration_and_the_policy() {
    for (mode, advisory) in [
        (Mode::Error, true),
        (Mode::Panic, true),
        (Mode::Timeout, true),
        (Mode::Timeout, false),
    ] {
        let failed: Arc<Mutex<Vec<HookFailed>>> = Arc::default();
        let f = failed.clone();
        let runtime = Runtime::new().with(on::hook_failed(move |ev, _ctx| {
            f.lock().unwrap().push(ev.clone());
            std::future::ready(Ok(ev))
        }));
        let reg = if advisory {
            flaky(mode).advisory()
        } else {
            flaky(mode)
        };
        let agent = Agent::builder("planner")
            .model(
                ScriptedModel::new()
                    .tool_call("get_weather", json!({"city": "Paris"}))
                    .text("ok"),
            )
            .tool(weather(&new_log(), &Counter::default()))
            .with(reg)
            .build()
            .unwrap();

        let result = runtime.run(&agent, "Paris?").await;

        assert_eq!(result.is_ok(), advisory, "{mode:?} advisory={advisory}");
        let failed = failed.lock().unwrap().clone();
        assert_eq!(failed.len(), 1, "{mode:?}");
        let ev = &failed[0];
        assert_eq!(ev.hook(), "flaky");
        assert_eq!(ev.event(), EventKind::BeforeTool);
        assert_eq!(ev.advisory(), advisory);
        assert_eq!(ev.error(), failure_of(mode).to_string());
        if let Mode::Timeout = mode {
            assert!(ev.duration() >= LIMIT, "{:?}", ev.duration());
            assert!(
                ev.duration() < Duration::from_secs(5),
                "{:?}",
                ev.duration()
            );
        }
    }
}

#[tokio::test]
async fn meta_events_report_each_hook_start_and_finish_with_its_duration() {
    let (meta, durations) = (new_log(), Durations::default());
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("ok"))
        .with(
            on::run_start(|ev, _ctx| async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                Ok(ev)
            })
            .named("slow"),
        )
        .with(on::run_end(|ev, _ctx| std::future::ready(Ok(ev))).named("quick"))
        .build()
        .unwrap();

    observed_runtime(&meta, &durations)
        .run(&agent, "Hi")
        .await
        .unwrap();

    assert_eq!(
        entries(&meta),
        [
            "HookStarted:slow:RunStart",
            "HookFinished:slow:RunStart",
            "HookStarted:quick:RunEnd",
            "HookFinished:quick:RunEnd",
        ]
    );
    let durations = durations.lock().unwrap().clone();
    let names: Vec<&str> = durations.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["finished slow", "finished quick"]);
    assert!(durations[0].1 >= Duration::from_millis(30), "{durations:?}");
}

#[tokio::test]
async fn an_advisory_failure_without_meta_observers_lets_the_run_finish() {
    // Without a HookFailed observer the failure is only logged; the run and its input are
    // unaffected.
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("ok"))
        .with(
            on::run_start(|_ev, _ctx| std::future::ready(Err(BoxError::from("nope"))))
                .named("broken")
                .advisory(),
        )
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Hi").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("ok"));
    assert_eq!(out.messages.first().unwrap().text(), "Hi");
}

/// A closure hook body that fails with "bad hook".
fn fail<E: Send + 'static>() -> impl Fn(E, HookCtx) -> Ready<HookResult<E>> + Send + Sync {
    |_ev, _ctx| std::future::ready(Err(BoxError::from("bad hook")))
}

#[tokio::test]
async fn the_error_names_the_event_the_failing_hook_was_handling() {
    let cases: Vec<(EventKind, HookRegistration)> = vec![
        (EventKind::RunStart, on::run_start(fail()).named("bad")),
        (EventKind::BeforeStep, on::before_step(fail()).named("bad")),
        (
            EventKind::BeforeModel,
            on::before_model(fail()).named("bad"),
        ),
        (EventKind::TextDelta, on::text_delta(fail()).named("bad")),
        (EventKind::AfterModel, on::after_model(fail()).named("bad")),
        (
            EventKind::MessageAdded,
            on::message_added(fail()).named("bad"),
        ),
        (EventKind::BeforeTool, on::before_tool(fail()).named("bad")),
        (EventKind::AfterTool, on::after_tool(fail()).named("bad")),
        (EventKind::AfterStep, on::after_step(fail()).named("bad")),
        (EventKind::Stop, on::stop(fail()).named("bad")),
        (EventKind::RunEnd, on::run_end(fail()).named("bad")),
    ];
    for (kind, reg) in cases {
        let model = ScriptedModel::new()
            .tool_call("get_weather", json!({"city": "Paris"}))
            .text("ok");
        let agent = Agent::builder("a")
            .model(model)
            .tool(weather(&new_log(), &Counter::default()))
            .with(reg)
            .build()
            .unwrap();

        let err = Runtime::new().run(&agent, "Paris?").await.unwrap_err();

        match err {
            Error::Hook(e) => assert_eq!(
                e,
                HookError {
                    hook: "bad".into(),
                    event: kind,
                    failure: HookFailure::Error("bad hook".into()),
                }
            ),
            other => panic!("{kind}: expected Error::Hook, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_hook_that_panics_before_returning_its_future_is_caught_too() {
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("ok"))
        .with(
            on::before_model(|_ev, _ctx| -> Ready<HookResult<BeforeModel>> { panic!("sync boom") })
                .named("eager"),
        )
        .build()
        .unwrap();

    let err = Runtime::new().run(&agent, "Hi").await.unwrap_err();

    match err {
        Error::Hook(e) => assert_eq!(
            e,
            HookError {
                hook: "eager".into(),
                event: EventKind::BeforeModel,
                failure: HookFailure::Panic("sync boom".into()),
            }
        ),
        other => panic!("expected Error::Hook, got {other:?}"),
    }
}

#[tokio::test]
async fn a_default_hook_with_no_name_is_named_after_its_event() {
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("ok"))
        .after_model(fail())
        .build()
        .unwrap();

    let err = Runtime::new().run(&agent, "Hi").await.unwrap_err();

    assert_eq!(
        err.to_string(),
        "hook `AfterModel` failed on AfterModel: returned an error: bad hook"
    );
}

// ---------------------------------------------------------------- around middleware

fn panicking_model_middleware() -> impl Fn(
    ModelRequest,
    Next<ModelRequest, ModelOutcome>,
) -> futures::future::BoxFuture<'static, ModelOutcome>
+ Send
+ Sync
+ 'static {
    |_req, _next| Box::pin(async move { panic!("mw boom") })
}

#[tokio::test]
async fn a_panicking_around_model_middleware_fails_the_run_naming_it() {
    let model = ScriptedModel::new().text("ok");
    let agent = Agent::builder("a")
        .model(model.clone())
        .with(on::around_model(panicking_model_middleware()).named("mw"))
        .build()
        .unwrap();

    let err = Runtime::new().run(&agent, "Hi").await.unwrap_err();

    match err {
        Error::Hook(e) => assert_eq!(
            e,
            HookError {
                hook: "mw".into(),
                event: EventKind::AroundModel,
                failure: HookFailure::Panic("mw boom".into()),
            }
        ),
        other => panic!("expected Error::Hook, got {other:?}"),
    }
    assert_eq!(model.calls(), 0);
}

#[tokio::test]
async fn an_around_model_middleware_that_overruns_its_timeout_fails_the_run() {
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("ok"))
        .with(
            on::around_model(|req, next| async move {
                tokio::time::sleep(Duration::from_secs(5)).await;
                next.run(req).await
            })
            .named("slow-mw")
            .timeout(LIMIT),
        )
        .build()
        .unwrap();

    let err = Runtime::new().run(&agent, "Hi").await.unwrap_err();

    match err {
        Error::Hook(e) => assert_eq!(
            e,
            HookError {
                hook: "slow-mw".into(),
                event: EventKind::AroundModel,
                failure: HookFailure::Timeout(LIMIT),
            }
        ),
        other => panic!("expected Error::Hook, got {other:?}"),
    }
}

#[tokio::test]
async fn an_around_model_middleware_that_panics_before_returning_its_future_is_caught() {
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("ok"))
        .with(
            on::around_model(|_req, _next| -> futures::future::Ready<ModelOutcome> {
                panic!("eager mw")
            })
            .named("eager-mw"),
        )
        .build()
        .unwrap();

    let runtime = Runtime::new();
    let run = runtime.run(&agent, "Hi").into_future();
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(run)).await;

    match result {
        Ok(Err(Error::Hook(e))) => assert_eq!(
            e,
            HookError {
                hook: "eager-mw".into(),
                event: EventKind::AroundModel,
                failure: HookFailure::Panic("eager mw".into()),
            }
        ),
        Ok(other) => panic!("expected Error::Hook, got {:?}", other.map(|o| o.output)),
        Err(_) => panic!("the middleware's panic escaped Runtime::run"),
    }
}

#[tokio::test]
async fn a_panicking_around_tool_middleware_fails_the_run_like_any_hook() {
    let failed = new_log();
    let f = failed.clone();
    let model = ScriptedModel::new()
        .tool_call("get_weather", json!({"city": "Paris"}))
        .text("ok");
    let agent = Agent::builder("a")
        .model(model)
        .tool(weather(&new_log(), &Counter::default()))
        .with(
            on::around_tool(|_call, _next| async move {
                panic!("tool mw boom");
            })
            .named("tool-mw"),
        )
        .hook_failed(move |ev, _ctx| {
            push(&f, format!("{}:{}", ev.hook(), ev.event()));
            std::future::ready(Ok(ev))
        })
        .build()
        .unwrap();

    let result = Runtime::new().run(&agent, "Paris?").await;

    match result {
        Err(Error::Hook(e)) => assert_eq!(
            e,
            HookError {
                hook: "tool-mw".into(),
                event: EventKind::AroundTool,
                failure: HookFailure::Panic("tool mw boom".into()),
            }
        ),
        Err(other) => panic!("expected Error::Hook, got {other:?}"),
        Ok(out) => panic!(
            "the run went on; the model saw: {:?}",
            tool_results(&out.messages)
        ),
    }
    assert_eq!(entries(&failed), ["tool-mw:AroundTool"]);
}

#[tokio::test]
async fn a_run_error_observer_that_keeps_the_error_does_not_change_the_error_returned() {
    let kept: Arc<Mutex<Vec<Arc<Error>>>> = Arc::default();
    let k = kept.clone();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("ok"))
        .with(on::before_model(fail()).named("bad"))
        .run_failed(move |ev, _ctx| {
            k.lock().unwrap().push(ev.error().clone());
            std::future::ready(Ok(ev))
        })
        .build()
        .unwrap();

    let err = Runtime::new().run(&agent, "Hi").await.unwrap_err();

    assert!(matches!(err, Error::Hook(_)), "{err:?}");
    assert_eq!(kept.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_advisory_hooks_failure_is_a_hook_failed_run_event_on_the_stream_for_every_kind_of_hook()
{
    use futures::StreamExt;
    let sync_flaky = || {
        on_sync::before_tool(|_ev, _ctx| Err(BoxError::from("sync flaky failed")))
            .named("flaky")
            .advisory()
    };
    let cases: Vec<(HookRegistration, &str)> = vec![
        (flaky(Mode::Error).advisory(), "flaky failed"),
        (flaky(Mode::Panic).advisory(), "flaky panicked"),
        (flaky(Mode::Timeout).advisory(), "timed out"),
        (sync_flaky(), "sync flaky failed"),
    ];
    for (reg, says) in cases {
        let model = ScriptedModel::new()
            .tool_call("get_weather", json!({"city": "Paris"}))
            .text("Enjoy.");
        let agent = Agent::builder("planner")
            .model(model)
            .tool(weather(&new_log(), &Counter::default()))
            .with(reg)
            .build()
            .unwrap();
        let mut run = Runtime::new().run(&agent, "Paris?").start();
        let mut failed = Vec::new();
        while let Some(ev) = run.events().next().await {
            if let RunEvent::HookFailed {
                hook, event, error, ..
            } = ev
            {
                failed.push((hook, event, error));
            }
        }
        let out = run.result().await.unwrap();
        assert_eq!(
            out.output.as_deref(),
            Some("Enjoy."),
            "{says}: the run goes on"
        );
        assert_eq!(failed.len(), 1, "{says}: {failed:?}");
        let (hook, event, error) = &failed[0];
        assert_eq!(hook, "flaky");
        assert_eq!(*event, EventKind::BeforeTool);
        assert!(error.contains(says), "{says}: {error}");
    }
}
