//! A hook cannot change what `SubAgentError` only reports: these writes must not compile.
use agentry_core::hooks::SubAgentError;

fn rewrite(ev: &mut SubAgentError) {
    ev.agent = ev.agent().clone();
    ev.input = ev.input().clone();
    ev.error = ev.error().clone();
}

fn main() {
    let _ = rewrite;
}
