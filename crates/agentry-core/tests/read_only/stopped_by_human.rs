//! A hook cannot change what `StoppedByHuman` only reports: these writes must not compile.
use agentry_core::hooks::StoppedByHuman;

fn rewrite(ev: &mut StoppedByHuman) {
    ev.call_id = ev.call_id().clone();
    ev.reason = ev.reason().clone();
    ev.by = ev.by().clone();
}

fn main() {
    let _ = rewrite;
}
