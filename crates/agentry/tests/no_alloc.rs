//! "An event with no hooks costs a branch: no allocation." Checked with a counting global
//! allocator (this file is its own test binary for that reason). Counting is per thread and only
//! inside the measured section, so tests running in parallel do not disturb each other; every
//! measured section runs on the test's own thread (current-thread tokio runtime, no spawns).

use agentry::ScriptedTurn;
use agentry::hooks::{BeforeTool, Events, Hooks, on, on_mut};
use agentry::prelude::*;
use agentry::{RunContext, RunContextSpec, RunEngine};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;

struct Counting;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = ON.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
            let _ = BYTES.try_with(|b| b.set(b.get() + size as u64));
        }
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations (count, bytes) made on this thread while counting was on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Allocs {
    count: u64,
    bytes: u64,
}

fn start_counting() {
    COUNT.with(|c| c.set(0));
    BYTES.with(|b| b.set(0));
    ON.with(|on| on.set(true));
}

fn stop_counting() -> Allocs {
    ON.with(|on| on.set(false));
    Allocs {
        count: COUNT.with(Cell::get),
        bytes: BYTES.with(Cell::get),
    }
}

fn measure<R>(f: impl FnOnce() -> R) -> (R, Allocs) {
    start_counting();
    let r = f();
    (r, stop_counting())
}

async fn measure_async<F: Future>(f: F) -> (F::Output, Allocs) {
    start_counting();
    let r = f.await;
    (r, stop_counting())
}

fn engine() -> RunEngine {
    RunEngine::new(RunContextSpec {
        step: 1,
        ..RunContextSpec::new("run-1", "a")
    })
}

fn context() -> RunContext {
    engine().context().clone()
}

fn before_tool_event() -> BeforeTool {
    BeforeTool::new("c1", "echo", json!({"text": "hi"}))
}

#[test]
fn the_counter_counts() {
    let (v, a) = measure(|| vec![1u8; 100]);
    assert_eq!(v.len(), 100);
    assert_eq!(a.count, 1);
    assert!(a.bytes >= 100);
    let ((), a) = measure(|| ());
    assert_eq!(a.count, 0);
}

#[test]
fn wants_on_empty_hooks_does_not_allocate() {
    let ((hooks, wanted), a) = measure(|| {
        let hooks = Hooks::new();
        let wanted = hooks.wants(Events::BEFORE_TOOL);
        (hooks, wanted)
    });
    assert!(!wanted);
    assert!(hooks.is_empty());
    assert_eq!(a.count, 0, "{a:?}");
}

#[test]
fn wants_on_hooks_of_other_events_does_not_allocate() {
    let mut hooks = Hooks::new();
    hooks.add(on::after_tool(|ev, _ctx| async move { Ok(ev) }));
    let (wanted, a) = measure(|| {
        (
            hooks.wants(Events::BEFORE_TOOL),
            hooks.wants(Events::AFTER_TOOL),
        )
    });
    assert_eq!(wanted, (false, true));
    assert_eq!(a.count, 0, "{a:?}");
}

#[tokio::test]
async fn dispatching_an_event_without_hooks_does_not_allocate() {
    let engine = engine();
    let ctx = engine.context().clone();
    let empty = Hooks::new();
    let mut others = Hooks::new();
    others.add(on::after_tool(|ev, _ctx| async move { Ok(ev) }));
    others.add(on::sub_agent_failed(|ev, _ctx| async move { Ok(ev) }));
    others.add(on::hook_started(|ev, _ctx| async move { Ok(ev) }));

    for hooks in [&empty, &others] {
        let ev = before_tool_event();
        let (out, a) = measure_async(hooks.dispatch(ev, &ctx)).await;
        let out = out.unwrap();
        assert_eq!(out.input, json!({"text": "hi"}));
        assert!(out.decision().is_none());
        assert_eq!(a.count, 0, "dispatch to {hooks:?}: {a:?}");

        let ev = before_tool_event();
        let (out, a) = measure_async(hooks.dispatch_decided(ev, &ctx)).await;
        assert!(out.unwrap().1.is_none());
        assert_eq!(a.count, 0, "dispatch_decided to {hooks:?}: {a:?}");
    }
    // The context's per-call bookkeeping is free when nothing happened.
    let (notices, a) = measure(|| engine.take_notices());
    assert!(notices.is_empty());
    assert_eq!(a.count, 0, "{a:?}");
    let (_, a) = measure(|| engine.send_event(|_| unreachable!("nobody listens")));
    assert_eq!(a.count, 0, "{a:?}");
}

#[tokio::test]
async fn in_place_hooks_that_complete_at_once_allocate_nothing_per_invocation() {
    // The same event through one hook and through five: whatever the dispatch of an event with
    // asynchronous hooks allocates, a hook invocation adds nothing to it.
    let ctx = context();
    let mut allocs = Vec::new();
    for n in [1, 5] {
        let mut hooks = Hooks::new();
        for _ in 0..n {
            // (`get_mut`, not `input["key"] = ..`, which allocates a copy of the key.)
            hooks.add(on_mut::before_tool(async |ev, _ctx| {
                *ev.input.get_mut("in_place").unwrap() = json!(1);
                Ok(())
            }));
            hooks.add(on_mut::with(7_u32).before_tool(async |n, ev, _ctx| {
                *ev.input.get_mut("with").unwrap() = json!(*n);
                Ok(())
            }));
        }
        // The fields the hooks write are there already: the writes themselves allocate nothing.
        let mut ev = before_tool_event();
        ev.input["in_place"] = json!(0);
        ev.input["with"] = json!(0);
        let (out, a) = measure_async(hooks.dispatch(ev, &ctx)).await;
        let out = out.unwrap();
        assert_eq!(out.input["in_place"], json!(1));
        assert_eq!(out.input["with"], json!(7));
        allocs.push(a);

        // The path runs take (the event in their slot): the whole chain allocates nothing.
        let mut ev = before_tool_event();
        ev.input["in_place"] = json!(0);
        ev.input["with"] = json!(0);
        let mut slot = Some(ev);
        let (by, a) = measure_async(hooks.dispatch_chain_in(&mut slot, &ctx)).await;
        assert!(by.unwrap().is_none());
        assert_eq!(slot.unwrap().input["with"], json!(7));
        assert_eq!(
            a.count, 0,
            "dispatch_chain_in through {n} x 2 in-place hooks: {a:?}"
        );
    }
    assert_eq!(allocs[0], allocs[1], "{allocs:?}");
}

#[tokio::test]
async fn dispatching_to_a_hook_is_measured() {
    // The control: with a hook on the event, dispatch does allocate (so the zeros above are not
    // an artefact of the counter).
    let ctx = context();
    let mut hooks = Hooks::new();
    hooks.add(on::before_tool(|mut ev, _ctx| async move {
        ev.input["seen"] = json!(true);
        Ok(ev)
    }));
    let ev = before_tool_event();
    let (out, a) = measure_async(hooks.dispatch(ev, &ctx)).await;
    assert_eq!(out.unwrap().input["seen"], json!(true));
    assert!(a.count > 0, "{a:?}");
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// An agent whose run takes `steps` steps: `steps - 1` tool calls, then an answer; with
/// `idle_hook`, it also has an agent-scope hook on an event the run never fires.
fn build_agent(steps: u32, idle_hook: bool) -> Agent {
    let noop = tool(
        "noop",
        "Does nothing",
        |_: NoArgs, _ctx: ToolCtx| async move { Ok("ok") },
    );
    let model = ScriptedModel::from_fn(move |n, _req| {
        if n < steps {
            ScriptedTurn::tool_call("noop", json!({}))
        } else {
            ScriptedTurn::text("done")
        }
    })
    .record_requests(false);
    let b = Agent::builder("bench")
        .model(model)
        .tool(noop)
        .max_steps(steps + 1);
    let b = if idle_hook {
        b.sub_agent_failed(|ev, _ctx| async move { Ok(ev) })
    } else {
        b
    };
    b.build().unwrap()
}

fn agent(steps: u32) -> Agent {
    build_agent(steps, false)
}

/// Allocations of one whole run of `steps` steps on `rt` (the agent is built beforehand).
async fn run_allocs(rt: &Runtime, steps: u32) -> Allocs {
    let agent = agent(steps);
    let (out, a) = measure_async(rt.run(&agent, "go").into_future()).await;
    let out = out.unwrap();
    assert_eq!(out.steps, steps);
    assert_eq!(out.output.as_deref(), Some("done"));
    a
}

/// A runtime with hooks only on events a plain run never fires.
fn runtime_with_idle_hooks() -> Runtime {
    Runtime::new()
        .with(on::sub_agent_failed(|ev, _ctx| async move { Ok(ev) }))
        .with(on::after_sub_agent(|ev, _ctx| async move { Ok(ev) }))
}

#[tokio::test]
async fn hooks_on_events_that_never_fire_cost_no_allocation_in_a_run() {
    let bare = Runtime::new();
    let idle = runtime_with_idle_hooks();
    assert!(idle.hooks().wants(Events::SUB_AGENT_FAILED));
    // Warm up one-time allocations (lazy statics, thread-locals).
    run_allocs(&bare, 3).await;
    run_allocs(&idle, 3).await;

    for steps in [1, 10, 40] {
        let a0 = run_allocs(&bare, steps).await;
        let a1 = run_allocs(&idle, steps).await;
        assert!(a0.count > 0);
        assert_eq!(
            a0, a1,
            "{steps} steps: no hooks {a0:?} vs hooks on idle events {a1:?}"
        );
    }
}

#[tokio::test]
async fn agent_scope_hooks_on_idle_events_cost_a_constant_per_run() {
    // Agent-scope hooks are merged with the runtime's once per run; that may allocate, but the
    // cost must not depend on how many steps the run takes.
    let rt = Runtime::new();
    let extra = |steps: u32| {
        let rt = rt.clone();
        async move {
            let plain = build_agent(steps, false);
            let hooked = build_agent(steps, true);
            let (o0, a0) = measure_async(rt.run(&plain, "go").into_future()).await;
            let (o1, a1) = measure_async(rt.run(&hooked, "go").into_future()).await;
            assert_eq!(o0.unwrap().steps, steps);
            assert_eq!(o1.unwrap().steps, steps);
            a1.count as i64 - a0.count as i64
        }
    };
    run_allocs(&rt, 3).await;
    let short = extra(5).await;
    let long = extra(50).await;
    eprintln!("extra allocations of agent-scope idle hooks: {short} (5 steps), {long} (50 steps)");
    assert_eq!(
        short, long,
        "extra allocations: 5 steps {short}, 50 steps {long}"
    );
}

#[tokio::test]
async fn allocations_per_step_do_not_grow_with_the_history() {
    let rt = Runtime::new();
    run_allocs(&rt, 3).await;
    let t10 = run_allocs(&rt, 10).await;
    let t55 = run_allocs(&rt, 55).await;
    let t100 = run_allocs(&rt, 100).await;
    let per_step = |a: Allocs, b: Allocs| {
        (
            (b.count - a.count) as f64 / 45.0,
            (b.bytes - a.bytes) as f64 / 45.0,
        )
    };
    let early = per_step(t10, t55);
    let late = per_step(t55, t100);
    eprintln!("10: {t10:?}, 55: {t55:?}, 100: {t100:?}; per step {early:?} then {late:?}");
    // A step allocates the same number of times at step 10 and at step 100 …
    assert!(
        (late.0 - early.0).abs() <= 1.0,
        "allocations per step grew from {} to {}",
        early.0,
        late.0
    );
    // … and about the same number of bytes: a history copied at every step would add bytes
    // in proportion to its length.
    assert!(
        late.1 <= early.1 * 1.25 + 256.0,
        "bytes per step grew from {} to {}",
        early.1,
        late.1
    );
    // The whole run is linear: 100 steps cost about ten times 10 steps.
    let per10 = t10.count as f64 / 10.0;
    let per100 = t100.count as f64 / 100.0;
    assert!(
        per100 <= per10 + 2.0,
        "per-step allocations: {per10} at 10 steps, {per100} at 100 steps"
    );
}

#[tokio::test]
async fn dispatching_to_synchronous_hooks_does_not_allocate() {
    let mut hooks = Hooks::new();
    for _ in 0..10 {
        hooks.add(agentry::hooks::on_sync::before_tool(|ev, _ctx| {
            if let Some(seen) = ev.input.get_mut("seen") {
                *seen = Value::Bool(true);
            }
            Ok(())
        }));
    }
    let ctx = context();
    let mut ev = before_tool_event();
    ev.input["seen"] = json!(false);
    let (ev, a) = measure_async(hooks.dispatch(ev, &ctx)).await;
    assert_eq!(ev.unwrap().input["seen"], json!(true));
    assert_eq!(a.count, 0, "{a:?}");
}
