//! A hook cannot change what `BeforeSubAgent` only reports: these writes must not compile.
use agentry_core::hooks::BeforeSubAgent;

fn rewrite(ev: &mut BeforeSubAgent) {
    ev.agent = ev.agent().clone();
    ev.call_id = ev.call_id().clone();
}

fn main() {
    let _ = rewrite;
}
