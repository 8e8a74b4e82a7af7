//! The binary on a Postgres store (`[store] url = "postgres://..."`, `${VAR}` expanded): a run,
//! its listing, `show` and a paused run approved from a second process. The server is the one
//! `AGENTRY_TEST_POSTGRES_URL` names (`bash .ci/run` starts one); without it the test is skipped,
//! and under CI=true it fails.

use crate::common::{Project, ndjson, run_id};
use serde_json::json;

fn postgres_url() -> Option<String> {
    match std::env::var("AGENTRY_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "AGENTRY_TEST_POSTGRES_URL is not set; `bash .ci/run` starts a server"
            );
            eprintln!("SKIPPED: AGENTRY_TEST_POSTGRES_URL is not set");
            None
        }
    }
}

#[test]
fn runs_are_checkpointed_listed_and_approved_on_postgres() {
    let Some(url) = postgres_url() else { return };
    // An agent name of its own: the database is shared with other tests.
    let agent = format!(
        "pg{}x{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let config = format!(
        "[agents.{agent}]\nmodel = \"scripted:turns.json\"\ntools = [\"Write\"]\n\n[store]\nurl = \"${{PG_URL}}\"\n"
    );
    let p = Project::new(
        &config,
        json!([
            {"tool_calls": [{"name": "Write", "input": {"file_path": "out.txt", "content": "pg"}}]},
            {"text": "Wrote it."}
        ]),
    );
    let json = |args: &[&str]| {
        let out = p
            .agentry()
            .env("PG_URL", &url)
            .arg("--json")
            .args(args)
            .output()
            .unwrap();
        (ndjson(&out.stdout), out.status.code().unwrap_or(-1))
    };
    let (lines, code) = json(&["run", "write it"]);
    assert_eq!(code, 3, "the Write call waits for approval: {lines:?}");
    let run = run_id(&lines);
    assert!(
        !p.file(".agentry/runs.db").exists(),
        "nothing went to the SQLite default"
    );

    let (runs, code) = json(&["runs", "--agent", &agent]);
    assert_eq!(code, 0);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "awaiting_approval");

    let (lines, code) = json(&["approve", &run]);
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(lines.last().unwrap()["output"], "Wrote it.");
    assert_eq!(std::fs::read_to_string(p.file("out.txt")).unwrap(), "pg");

    let (shown, code) = json(&["show", &run]);
    assert_eq!(code, 0);
    assert_eq!(shown[0]["stop"]["kind"], "final_answer", "{shown:?}");
}
