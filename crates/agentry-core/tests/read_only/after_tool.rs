//! A hook cannot change what `AfterTool` only reports: these writes must not compile.
use agentry_core::hooks::AfterTool;

fn rewrite(ev: &mut AfterTool) {
    ev.call_id = ev.call_id().clone();
    ev.name = ev.name().clone();
    ev.input = ev.input().clone();
    ev.mocked = ev.mocked().clone();
}

fn main() {
    let _ = rewrite;
}
