//! A hook cannot change what `Stop` only reports: these writes must not compile.
use agentry_core::hooks::Stop;

fn rewrite(ev: &mut Stop) {
    ev.reason = ev.reason().clone();
    ev.step = ev.step().clone();
    ev.output = ev.output().clone();
}

fn main() {
    let _ = rewrite;
}
