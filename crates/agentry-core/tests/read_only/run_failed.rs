//! A hook cannot change what `RunFailed` only reports: these writes must not compile.
use agentry_core::hooks::RunFailed;

fn rewrite(ev: &mut RunFailed) {
    ev.error = ev.error().clone();
}

fn main() {
    let _ = rewrite;
}
