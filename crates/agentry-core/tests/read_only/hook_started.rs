//! A hook cannot change what `HookStarted` only reports: these writes must not compile.
use agentry_core::hooks::HookStarted;

fn rewrite(ev: &mut HookStarted) {
    ev.hook = ev.hook().clone();
    ev.event = ev.event().clone();
}

fn main() {
    let _ = rewrite;
}
