//! A hook cannot change what `RunError` only reports: these writes must not compile.
use agentry_core::hooks::RunError;

fn rewrite(ev: &mut RunError) {
    ev.error = ev.error().clone();
}

fn main() {
    let _ = rewrite;
}
