//! A hook cannot change what `SubAgentFailed` only reports: these writes must not compile.
use agentry_core::hooks::SubAgentFailed;

fn rewrite(ev: &mut SubAgentFailed) {
    ev.agent = ev.agent().clone();
    ev.input = ev.input().clone();
    ev.error = ev.error().clone();
}

fn main() {
    let _ = rewrite;
}
