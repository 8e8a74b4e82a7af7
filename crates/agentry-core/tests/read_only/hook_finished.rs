//! A hook cannot change what `HookFinished` only reports: these writes must not compile.
use agentry_core::hooks::HookFinished;

fn rewrite(ev: &mut HookFinished) {
    ev.hook = ev.hook().clone();
    ev.event = ev.event().clone();
    ev.duration = ev.duration().clone();
}

fn main() {
    let _ = rewrite;
}
