//! A hook cannot change what `ToolError` only reports: these writes must not compile.
use agentry_core::hooks::ToolError;

fn rewrite(ev: &mut ToolError) {
    ev.input = ev.input().clone();
    ev.error = ev.error().clone();
}

fn main() {
    let _ = rewrite;
}
