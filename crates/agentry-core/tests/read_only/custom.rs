//! A hook cannot change what `Custom` only reports: these writes must not compile.
use agentry_core::hooks::Custom;

fn rewrite(ev: &mut Custom) {
    ev.name = ev.name().clone();
    ev.data = ev.data().clone();
}

fn main() {
    let _ = rewrite;
}
