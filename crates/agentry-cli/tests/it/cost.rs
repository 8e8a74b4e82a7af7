//! The run summary's cost: a hosted model (a real aimock server speaking OpenAI Chat
//! Completions) priced by the config's `[prices]` table, through the real binary.

use crate::common::{Project, aimock};
use predicates::prelude::*;
use serde_json::json;

const CONFIG: &str = r#"
[agents.priced]
model = "openai:gpt-test"

[prices."openai:gpt-test"]
input = 3.0
output = 15.0
"#;

#[test]
fn a_priced_hosted_model_s_run_shows_its_cost() {
    let Some(server) = aimock("priced.json") else {
        return;
    };
    let p = Project::new(CONFIG, json!([]));
    let run = |json: bool| {
        let mut cmd = p.agentry();
        cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.url))
            .env("OPENAI_API_KEY", "test-key");
        if json {
            cmd.arg("--json");
        }
        cmd.args(["run", "what does it cost"]);
        cmd
    };
    // 1,000 tokens in at $3/M and 500 out at $15/M.
    let out = run(true).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last: serde_json::Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(|l| serde_json::from_str(l).unwrap())
        .unwrap();
    let cost = last["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.0105).abs() < 1e-9, "{last}");
    run(false).assert().code(0).stdout(predicate::str::contains(
        "1500 tokens (1000 in, 500 out) · $0.01 ·",
    ));
}

#[test]
fn an_unpriced_hosted_model_shows_no_cost() {
    let Some(server) = aimock("priced.json") else {
        return;
    };
    let p = Project::new(
        "[agents.unpriced]\nmodel = \"openai:gpt-test\"\n",
        json!([]),
    );
    let out = p
        .agentry()
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", "test-key")
        .args(["--json", "run", "what does it cost"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["cost_usd"], serde_json::Value::Null, "{last}");
    assert_eq!(last["usage"]["input_tokens"], 1000);
}
