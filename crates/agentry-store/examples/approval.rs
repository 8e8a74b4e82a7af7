//! A run that pauses for a person, and a second runtime (as another process would) that decides
//! it, on one SQLite file.
//!
//! `cargo run -p agentry-store --example approval [path/to/runs.db]`

use agentry::prelude::*;
use agentry::{Decision, RunQuery, RunStatus, RunStore};
use agentry::{Message, ScriptedTurn};
use agentry_store::SqliteStore;

#[derive(Deserialize, JsonSchema)]
struct Days {
    /// Delete logs older than this many days.
    days: u32,
}

fn agent() -> Agent {
    // A scripted model, keyed on the history so a fresh one (in another process) answers alike.
    let model = ScriptedModel::from_fn(|_, req| {
        match req
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool(_)))
            .count()
        {
            0 => ScriptedTurn::tool_call("delete_logs", json!({"days": 30})),
            _ => ScriptedTurn::text(format!(
                "Done: {}",
                req.messages.last().map(Message::text).unwrap_or_default()
            )),
        }
    });
    let delete_logs =
        tool(
            "delete_logs",
            "Deletes logs older than some days.",
            |a: Days, _ctx: ToolCtx| async move {
                Ok(format!("deleted logs older than {} days", a.days))
            },
        )
        .needs_approval();
    Agent::builder("ops")
        .model(model)
        .tool(delete_logs)
        .build()
        .expect("a valid agent")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let given = std::env::args().nth(1).map(std::path::PathBuf::from);
    let path = given.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("agentry-approval-{}.db", std::process::id()))
    });

    // The first runtime runs until the call that needs approval, and returns.
    let first = Runtime::new().store(SqliteStore::open(&path).await?);
    let out = first.run(&agent(), "Delete the old logs.").await?;
    let StopReason::AwaitingApproval { pending } = &out.stop else {
        return Err(format!("expected a pause, the run ended: {}", out.stop).into());
    };
    println!("run {} paused: {}", out.run_id, out.stop);
    for p in pending {
        println!(
            "  {} wants {} with {} ({})",
            p.call_id, p.tool, p.input, p.reason
        );
    }

    // Another runtime, on its own connection to the file, finds the run and approves it.
    let store = SqliteStore::open(&path).await?;
    let waiting = store
        .list(&RunQuery::all().status(RunStatus::AwaitingApproval))
        .await?;
    println!("waiting for approval: {}", waiting.len());
    let second = Runtime::new().store(store.clone());
    let done = second
        .decide(
            &agent(),
            &out.run_id,
            [Decision::approve(&pending[0].call_id)],
        )
        .await?;
    println!("{}", done.output.unwrap_or_default());
    for e in store.events(&out.run_id).await? {
        println!("  #{} {} {}", e.seq, e.event.kind, e.event.data);
    }
    if given.is_none() {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
    Ok(())
}
