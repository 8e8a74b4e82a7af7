//! A hook cannot change what `BeforeCompact` only reports: these writes must not compile.
use agentry_core::hooks::BeforeCompact;

fn rewrite(ev: &mut BeforeCompact) {
    ev.tokens = ev.tokens().clone();
    ev.threshold = ev.threshold().clone();
    ev.messages = ev.messages().clone();
}

fn main() {
    let _ = rewrite;
}
