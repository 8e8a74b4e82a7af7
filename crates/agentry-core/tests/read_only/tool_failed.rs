//! A hook cannot change what `ToolFailed` only reports: these writes must not compile.
use agentry_core::hooks::ToolFailed;

fn rewrite(ev: &mut ToolFailed) {
    ev.input = ev.input().clone();
    ev.error = ev.error().clone();
}

fn main() {
    let _ = rewrite;
}
