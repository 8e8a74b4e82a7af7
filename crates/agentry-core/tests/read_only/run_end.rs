//! A hook cannot change what `RunEnd` only reports: these writes must not compile.
use agentry_core::hooks::RunEnd;

fn rewrite(ev: &mut RunEnd) {
    ev.stop = ev.stop().clone();
    ev.output = ev.output().clone();
    ev.usage = ev.usage().clone();
    ev.steps = ev.steps().clone();
}

fn main() {
    let _ = rewrite;
}
