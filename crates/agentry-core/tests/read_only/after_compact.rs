//! A hook cannot change what `AfterCompact` only reports: these writes must not compile.
use agentry_core::hooks::AfterCompact;

fn rewrite(ev: &mut AfterCompact) {
    ev.plan = ev.plan().clone();
    ev.tokens_before = ev.tokens_before().clone();
}

fn main() {
    let _ = rewrite;
}
