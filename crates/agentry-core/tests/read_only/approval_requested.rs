//! A hook cannot change what `ApprovalRequested` only reports: these writes must not compile.
use agentry_core::hooks::ApprovalRequested;

fn rewrite(ev: &mut ApprovalRequested) {
    ev.pending = ev.pending().clone();
}

fn main() {
    let _ = rewrite;
}
