//! A hook cannot change what `CompactFailed` only reports: these writes must not compile.
use agentry_core::hooks::CompactFailed;

fn rewrite(ev: &mut CompactFailed) {
    ev.error = ev.error().clone();
    ev.plan = ev.plan().clone();
}

fn main() {
    let _ = rewrite;
}
