//! What a command hook says, read as Claude Code reads it and applied as the decision of its
//! event: its exit code (0, 2 or another), its stdout (the protocol's JSON object, or plain
//! text) and its stderr, on each event kind.
//!
//! Input: a byte that picks the event, a byte that picks the exit code, then stdout. The command
//! reads its stdin (the event), prints the stdout, prints a reason on stderr and exits.

use crate::hook_run::{EVENTS, run_with_handler, state_dir};
use crate::support::exclusive;
use serde_json::json;

/// The exit codes the second byte picks from.
const CODES: [i32; 4] = [0, 0, 2, 1];

/// Runs an agent whose one command hook answers as `data` says; panics if the run does not end
/// in time.
pub fn run(data: &[u8]) {
    let [pick, code, stdout @ ..] = data else {
        return;
    };
    let event = EVENTS[usize::from(*pick) % EVENTS.len()];
    let code = CODES[usize::from(*code) % CODES.len()];
    let _one_at_a_time = exclusive();
    let reply = state_dir().join("reply");
    std::fs::write(&reply, stdout).expect("the reply file");
    let command = format!(
        "cat >/dev/null; cat '{}'; echo 'blocked by policy' >&2; exit {code}",
        reply.display()
    );
    run_with_handler(
        event,
        json!({"type": "command", "command": command, "timeout": 5}),
    );
}
