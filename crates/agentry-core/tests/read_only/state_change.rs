//! A hook cannot change what `StateChange` only reports: these writes must not compile.
use agentry_core::hooks::StateChange;

fn rewrite(ev: &mut StateChange) {
    ev.previous = ev.previous().clone();
    ev.current = ev.current().clone();
    ev.source = ev.source().clone();
}

fn main() {
    let _ = rewrite;
}
