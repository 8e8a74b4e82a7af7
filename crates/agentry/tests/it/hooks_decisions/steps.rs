//! BeforeStep, AfterStep and Stop decisions: skip, stop, veto.

use super::*;
use agentry::Message;
use agentry::hooks::*;

#[tokio::test]
async fn before_step_skip_makes_no_model_call_but_the_step_counts() {
    let log = new_log();
    let model = ScriptedModel::new().text("done");
    let agent =
        Agent::builder("a")
            .model(model.clone())
            // Registered first: a decision ends the chain, so hooks after the skipping one do not
            // see the event.
            .with(Recorder::new(&log).events(
                Events::BEFORE_STEP | Events::AFTER_STEP | Events::BEFORE_MODEL | Events::STOP,
            ))
            .before_step(|mut ev, _ctx| async move {
                if ev.step() == 1 {
                    ev.skip();
                }
                Ok(ev)
            })
            .build()
            .unwrap();

    let out = Runtime::new().run(&agent, "go").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("done"));
    assert_eq!(out.steps, 2);
    assert_eq!(model.calls(), 1);
    assert_eq!(
        entries(&log),
        [
            "BeforeStep:1",
            "AfterStep:1",
            "BeforeStep:2",
            "BeforeModel",
            "AfterStep:2",
            "Stop:FinalAnswer",
        ]
    );
}

#[tokio::test]
async fn skipped_steps_count_toward_the_step_limit() {
    let model = ScriptedModel::new().text("never");
    let agent = Agent::builder("a")
        .model(model.clone())
        .max_steps(3)
        .before_step(|mut ev, _ctx| async move {
            ev.skip();
            Ok(ev)
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "go").await.unwrap();

    assert_eq!(out.stop, StopReason::MaxSteps { limit: 3 });
    assert_eq!(out.steps, 3);
    assert_eq!(out.output, None);
    assert_eq!(model.calls(), 0);
}

#[tokio::test]
async fn before_step_stop_ends_the_run_naming_the_hook_and_cannot_be_vetoed() {
    let (log, calls) = (new_log(), Counter::default());
    let model = paris_then("never");
    let stops = new_log();
    let stops_seen = stops.clone();
    let agent = weather_agent(&model, &log, &calls)
        .with(
            on::before_step(|mut ev, _ctx| async move {
                if ev.step() == 2 {
                    ev.stop("budget exhausted");
                }
                Ok(ev)
            })
            .named("budget"),
        )
        .stop(move |mut ev, _ctx| {
            ev.veto("keep going");
            push(
                &stops_seen,
                format!("{} vetoed={:?}", ev.reason(), ev.vetoed()),
            );
            async move { Ok(ev) }
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(
        out.stop,
        StopReason::Hook {
            hook: "budget".into(),
            reason: "budget exhausted".into()
        }
    );
    assert_eq!(out.output, None);
    assert_eq!(model.calls(), 1);
    assert_eq!(calls.get(), 1);
    assert_eq!(out.steps, 1, "the stopped step did not happen");
    assert_eq!(
        entries(&stops),
        ["stopped by hook `budget`: budget exhausted vetoed=None"]
    );
}

#[tokio::test]
async fn after_step_stop_ends_the_run_after_that_step() {
    let (log, calls) = (new_log(), Counter::default());
    let model = paris_then("never");
    let agent = weather_agent(&model, &log, &calls)
        .with(
            on::after_step(|mut ev, _ctx| async move {
                if ev.model_calls() >= 1 {
                    ev.stop("one model call is enough");
                }
                Ok(ev)
            })
            .named("limiter"),
        )
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(
        out.stop,
        StopReason::Hook {
            hook: "limiter".into(),
            reason: "one model call is enough".into()
        }
    );
    assert_eq!(out.output, None);
    assert_eq!(out.steps, 1);
    assert_eq!(model.calls(), 1);
    assert_eq!(calls.get(), 1, "the step's tool call completed");
    assert_eq!(
        out.messages.len(),
        3,
        "user, assistant tool call, tool result"
    );
}

// ---------------------------------------------------------------- Stop

#[tokio::test]
async fn stop_veto_continues_the_run_with_the_message_and_the_next_final_answer_ends_it() {
    let log = new_log();
    let vetoes = Counter::default();
    let model = ScriptedModel::new()
        .text("first answer")
        .text("second answer");
    let v = vetoes.clone();
    let agent = Agent::builder("a")
        .model(model.clone())
        .with(Recorder::new(&log).events(Events::MESSAGE_ADDED | Events::STOP))
        .stop(move |mut ev, _ctx| {
            if *ev.reason() == StopReason::FinalAnswer && v.bump() == 1 {
                ev.veto("Double-check the dates.");
            }
            async move { Ok(ev) }
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Plan it").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("second answer"));
    assert_eq!(out.stop, StopReason::FinalAnswer);
    assert_eq!(out.steps, 2);
    assert_eq!(model.calls(), 2);
    assert_eq!(vetoes.get(), 2);
    let last = model.requests()[1].messages.last().unwrap().clone();
    assert_eq!(last, Message::user("Double-check the dates."));
    assert_eq!(
        entries(&log),
        [
            "MessageAdded:user",
            "MessageAdded:assistant",
            "Stop:FinalAnswer",
            "MessageAdded:user",
            "MessageAdded:assistant",
            "Stop:FinalAnswer",
        ]
    );
}

#[tokio::test]
async fn stop_veto_is_ignored_for_the_step_limit() {
    let (log, calls) = (new_log(), Counter::default());
    let model = paris_then("never");
    let seen = new_log();
    let s = seen.clone();
    let agent = weather_agent(&model, &log, &calls)
        .max_steps(1)
        .stop(move |mut ev, _ctx| {
            ev.veto("keep going");
            push(&s, format!("{:?} vetoed={:?}", ev.reason(), ev.vetoed()));
            async move { Ok(ev) }
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(out.stop, StopReason::MaxSteps { limit: 1 });
    assert_eq!(out.output, None);
    assert_eq!(model.calls(), 1);
    assert_eq!(entries(&seen), ["MaxSteps { limit: 1 } vetoed=None"]);
}
