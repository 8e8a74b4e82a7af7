//! "An async hook that completes at once costs no allocation." Checked with a counting global
//! allocator (this file is its own test binary for that reason). Counting is per thread and only
//! inside the measured section, so tests running in parallel do not disturb each other.
//!
//! A dispatch may allocate a constant per event (its chain); what it must not do is allocate per
//! hook: dispatching to nine hooks must allocate exactly as much as dispatching to one.

use agentry_core::hooks::{
    AfterModel, AfterTool, BeforeModel, BeforeTool, Event, Events, Hook, HookCtx, HookExt,
    HookFuture, HookResult, Hooks, on,
};
use agentry_core::{History, ModelRequest, ModelResponse, RunContext, RunContextSpec};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

struct Counting;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    let _ = ON.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        }
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn context() -> RunContext {
    RunContext::detached(RunContextSpec {
        step: 1,
        ..RunContextSpec::new("run-1", "a")
    })
}

/// Dispatches `ev` and polls the dispatch once, outside any runtime (so a timer armed by mistake
/// would panic), counting the allocations of building and polling it. The dispatch must be
/// ready at once: every hook here completes without waiting.
fn dispatch_allocs<E: Event>(hooks: &Hooks, ev: E, ctx: &RunContext) -> (E, u64) {
    let mut cx = Context::from_waker(Waker::noop());
    COUNT.with(|c| c.set(0));
    ON.with(|on| on.set(true));
    let polled = {
        let mut fut = pin!(hooks.dispatch(ev, ctx));
        fut.as_mut().poll(&mut cx)
    };
    ON.with(|on| on.set(false));
    let Poll::Ready(out) = polled else {
        panic!("a chain of hooks that do not wait completes at its first poll");
    };
    (out.expect("no hook fails"), COUNT.with(Cell::get))
}

/// The allocations dispatching an event to `n` hooks made by `make` costs beyond one hook's.
fn extra_allocs<E: Event>(
    n: usize,
    make: impl Fn(&mut Hooks),
    event: impl Fn() -> E,
    check: impl Fn(&E),
) -> u64 {
    let ctx = context();
    let build = |k: usize| {
        let mut hooks = Hooks::new();
        for _ in 0..k {
            make(&mut hooks);
        }
        hooks
    };
    let (one, many) = (build(1), build(n));
    // Warm up one-time allocations (thread-locals, lazy statics).
    dispatch_allocs(&one, event(), &ctx);
    dispatch_allocs(&many, event(), &ctx);
    let (ev, a1) = dispatch_allocs(&one, event(), &ctx);
    check(&ev);
    let (ev, an) = dispatch_allocs(&many, event(), &ctx);
    check(&ev);
    an - a1
}

fn before_tool() -> BeforeTool {
    BeforeTool::new("c1", "echo", json!({"text": "hi"}))
}

#[test]
fn no_op_async_closure_hooks_allocate_nothing_per_call() {
    let extra = extra_allocs(
        9,
        |h| {
            h.add(on::before_tool(|ev, _ctx| async move { Ok(ev) }));
        },
        before_tool,
        |ev| assert_eq!(ev.input, json!({"text": "hi"})),
    );
    assert_eq!(extra, 0, "allocations for 8 more async BeforeTool hooks");

    let extra = extra_allocs(
        9,
        |h| {
            h.add(on::before_model(|ev, _ctx| async move { Ok(ev) }));
        },
        || BeforeModel::new(ModelRequest::new(History::default())),
        |_| {},
    );
    assert_eq!(extra, 0, "allocations for 8 more async BeforeModel hooks");

    let extra = extra_allocs(
        9,
        |h| {
            h.add(on::after_model(|ev, _ctx| async move { Ok(ev) }));
        },
        || AfterModel::new(ModelResponse::default()),
        |_| {},
    );
    assert_eq!(extra, 0, "allocations for 8 more async AfterModel hooks");
}

#[test]
fn async_hooks_that_change_the_event_or_use_the_context_allocate_nothing_per_call() {
    let seen = Arc::new(AtomicU64::new(0));
    let extra = extra_allocs(
        9,
        |h| {
            let seen = seen.clone();
            h.add(
                on::before_tool(move |mut ev, ctx| {
                    let seen = seen.clone();
                    async move {
                        assert_eq!(ctx.hook_name(), "count");
                        seen.fetch_add(1, Ordering::Relaxed);
                        if let Some(n) = ev.input.get_mut("n") {
                            *n = json!(n.as_u64().unwrap_or(0) + 1);
                        }
                        Ok(ev)
                    }
                })
                .named("count")
                .priority(5)
                .timeout(Duration::from_secs(5)),
            );
        },
        || BeforeTool::new("c1", "echo", json!({"n": 0})),
        |ev| assert!(ev.input["n"].as_u64().unwrap() >= 1),
    );
    assert_eq!(extra, 0, "allocations for 8 more counting hooks");
    assert_eq!(seen.load(Ordering::Relaxed), 2 * (1 + 9));

    // Shared state.
    let extra = extra_allocs(
        9,
        |h| {
            h.add(
                on::with(seen.clone()).after_tool(|seen, ev, _ctx| async move {
                    seen.fetch_add(1, Ordering::Relaxed);
                    Ok(ev)
                }),
            );
        },
        || AfterTool::new(json!(1), agentry_core::ToolResult::ok("c1", "echo", "ok")),
        |ev| assert_eq!(ev.content, "ok"),
    );
    assert_eq!(extra, 0, "allocations for 8 more hooks with shared state");
}

struct Plugin;

impl Hook for Plugin {
    fn wants(&self) -> Events {
        Events::BEFORE_TOOL | Events::AFTER_MODEL
    }
    async fn before_tool(&self, mut ev: BeforeTool, ctx: &HookCtx) -> HookResult<BeforeTool> {
        if ctx.step() > 100 {
            ev.block("too late");
        }
        Ok(ev)
    }
    // after_model: the trait's default.
}

#[test]
fn plugin_hooks_allocate_nothing_per_call() {
    let extra = extra_allocs(
        9,
        |h| {
            h.add(Plugin);
        },
        before_tool,
        |ev| assert!(ev.decision().is_none()),
    );
    assert_eq!(extra, 0, "allocations for 8 more plugin BeforeTool hooks");
    let extra = extra_allocs(
        9,
        |h| {
            h.add(Plugin);
        },
        || AfterModel::new(ModelResponse::default()),
        |_| {},
    );
    assert_eq!(extra, 0, "allocations for 8 more plugin AfterModel hooks");
}

#[test]
fn a_hook_future_too_large_to_keep_inline_is_boxed_and_still_runs() {
    // The control: a hook that keeps a large buffer across an await does not fit inline, so it
    // is boxed, once per call; the counter sees that (the zeros above are not its artefact).
    let extra = extra_allocs(
        9,
        |h| {
            h.add(on::before_tool(|mut ev, _ctx| async move {
                let buf = [7u8; 4096];
                std::future::ready(()).await;
                ev.input["sum"] = json!(buf.iter().map(|&b| u64::from(b)).sum::<u64>());
                Ok(ev)
            }));
        },
        before_tool,
        |ev| assert_eq!(ev.input["sum"], json!(7 * 4096)),
    );
    assert!(extra >= 8, "8 more boxed hooks allocated {extra} times");
}

#[test]
fn hook_futures_of_the_usual_hooks_fit_inline() {
    fn fits<E, F: Future<Output = HookResult<E>>>(_: &F) -> bool {
        HookFuture::<E>::fits::<F>()
    }
    let ctx = HookCtx::new(context(), "h".into());
    let ev = BeforeModel::new(ModelRequest::new(History::default()));
    assert!(fits(&async move {
        let _ctx = ctx;
        Ok(ev)
    }));
    assert!(!fits::<BeforeTool, _>(&async move {
        let buf = [0u8; 4096];
        std::future::ready(()).await;
        Err(buf.len().to_string().into())
    }));
}
