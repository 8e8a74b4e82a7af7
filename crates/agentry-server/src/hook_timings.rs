//! Every hook run of a served run, in its history: a runtime observer of HookFinished that
//! emits a `hook_ran` custom event (the hook, the event it handled, how long it took, and what
//! it changed of the event when it changed something), so the inspector shows each hook's
//! duration and changes beside its decisions, for runs followed live and read back later alike.
//! Runs without hooks pay nothing.

use agentry::Runtime;
use agentry::hooks::IntoHook;
use agentry::hooks::{HookExt, on_sync};
use serde_json::json;

/// The name of the custom event each hook run emits.
pub(crate) const HOOK_RAN: &str = "hook_ran";

/// The observer, lowest priority, advisory (a failure of it never fails a run).
fn observer() -> impl IntoHook {
    on_sync::hook_finished(|ev, ctx| {
        let mut ran = json!({
            "hook": ev.hook().to_string(),
            "event": ev.event(),
            "duration_us": u64::try_from(ev.duration().as_micros()).unwrap_or(u64::MAX),
        });
        if !ev.changed().is_empty() {
            ran["changed"] = json!(ev.changed());
        }
        ctx.emit(HOOK_RAN, ran);
        Ok(())
    })
    .named("agentry-server:hook-timings")
    .priority(i32::MIN)
    .advisory()
}

/// `runtime` with the observer.
pub(crate) fn record(runtime: Runtime) -> Runtime {
    runtime.with(observer())
}
