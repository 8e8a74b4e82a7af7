//! A hook cannot change what `AfterStep` only reports: these writes must not compile.
use agentry_core::hooks::AfterStep;

fn rewrite(ev: &mut AfterStep) {
    ev.step = ev.step().clone();
    ev.usage = ev.usage().clone();
    ev.model_calls = ev.model_calls().clone();
}

fn main() {
    let _ = rewrite;
}
