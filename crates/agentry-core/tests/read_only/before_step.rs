//! A hook cannot change what `BeforeStep` only reports: these writes must not compile.
use agentry_core::hooks::BeforeStep;

fn rewrite(ev: &mut BeforeStep) {
    ev.step = ev.step().clone();
}

fn main() {
    let _ = rewrite;
}
