//! Around-tool middleware cannot change which call it wraps (only the input it passes on).
use agentry_core::hooks::ToolCallRequest;

fn rewrite(req: &mut ToolCallRequest) {
    req.call_id = req.call_id().to_string();
    req.name = req.name().to_string();
}

fn main() {
    let _ = rewrite;
}
