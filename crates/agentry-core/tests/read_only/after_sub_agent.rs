//! A hook cannot change what `AfterSubAgent` only reports: these writes must not compile.
use agentry_core::hooks::AfterSubAgent;

fn rewrite(ev: &mut AfterSubAgent) {
    ev.agent = ev.agent().clone();
    ev.run_id = ev.run_id().clone();
    ev.input = ev.input().clone();
}

fn main() {
    let _ = rewrite;
}
