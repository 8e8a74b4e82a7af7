//! A hook cannot change what `HookFailed` only reports: these writes must not compile.
use agentry_core::hooks::HookFailed;

fn rewrite(ev: &mut HookFailed) {
    ev.hook = ev.hook().clone();
    ev.event = ev.event().clone();
    ev.duration = ev.duration().clone();
    ev.error = ev.error().clone();
    ev.advisory = ev.advisory().clone();
}

fn main() {
    let _ = rewrite;
}
