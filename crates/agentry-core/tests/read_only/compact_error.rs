//! A hook cannot change what `CompactError` only reports: these writes must not compile.
use agentry_core::hooks::CompactError;

fn rewrite(ev: &mut CompactError) {
    ev.error = ev.error().clone();
    ev.plan = ev.plan().clone();
}

fn main() {
    let _ = rewrite;
}
