//! A hook cannot change what `AfterModel` only reports: these writes must not compile.
use agentry_core::hooks::AfterModel;

fn rewrite(ev: &mut AfterModel) {
    ev.model = ev.model().clone();
}

fn main() {
    let _ = rewrite;
}
