//! A hook cannot change what `MessageAdded` only reports: these writes must not compile.
use agentry_core::hooks::MessageAdded;

fn rewrite(ev: &mut MessageAdded) {
    ev.message = ev.message().clone();
}

fn main() {
    let _ = rewrite;
}
