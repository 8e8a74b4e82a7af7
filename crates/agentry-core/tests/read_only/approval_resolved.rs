//! A hook cannot change what `ApprovalResolved` only reports: these writes must not compile.
use agentry_core::hooks::ApprovalResolved;

fn rewrite(ev: &mut ApprovalResolved) {
    ev.pending = ev.pending().clone();
    ev.decision = ev.decision().clone();
    ev.by = ev.by().clone();
}

fn main() {
    let _ = rewrite;
}
