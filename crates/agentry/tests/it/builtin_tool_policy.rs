//! The built-in tool policy in real runs: denied tools never run and the model sees why, the
//! allow list in "deny unless allowed" mode, globs, argument rules, and a runtime-wide policy
//! that reaches sub-agents.

use agentry::builtins::{ArgRule, ToolPolicy, ToolPolicyError};
use agentry::prelude::*;
use agentry::{Tool, hooks::on_sync};
use std::sync::{Arc, Mutex};

#[derive(Deserialize, JsonSchema)]
struct Args {
    #[serde(default)]
    command: String,
}

type Ran = Arc<Mutex<Vec<String>>>;

/// A tool that records that it ran.
fn recording(name: &'static str, ran: &Ran) -> impl Tool + use<> {
    let ran = ran.clone();
    tool(name, "A tool.", move |a: Args, _ctx: ToolCtx| {
        let ran = ran.clone();
        async move {
            ran.lock().unwrap().push(format!("{name} {}", a.command));
            Ok("done".to_string())
        }
    })
}

/// The results the model was sent, in order: (tool, is_error, content).
fn results(model: &ScriptedModel) -> Vec<(String, bool, String)> {
    let last = model.requests().pop().expect("the model was called");
    last.messages
        .iter()
        .filter_map(|m| m.tool_result())
        .map(|r| (r.name.clone(), r.is_error, r.content.text().into_owned()))
        .collect()
}

/// An agent whose model calls `calls` in one turn, then answers.
fn agent_calling(
    calls: Vec<(&'static str, serde_json::Value)>,
    tools: &[&'static str],
    ran: &Ran,
    policy: Option<ToolPolicy>,
) -> (Agent, ScriptedModel) {
    let model = ScriptedModel::new().tool_calls(calls).text("ok");
    let mut b = Agent::builder("ops").model(model.clone());
    for t in tools {
        b = b.tool(recording(t, ran));
    }
    if let Some(p) = policy {
        b = b.with(p);
    }
    (b.build().unwrap(), model)
}

#[tokio::test]
async fn a_denied_tool_never_runs_and_the_model_sees_why() {
    let ran = Ran::default();
    let policy = ToolPolicy::allow_by_default()
        .deny("shell*")
        .build()
        .unwrap();
    let (agent, model) = agent_calling(
        vec![
            ("shell_exec", json!({"command": "ls"})),
            ("read_file", json!({})),
        ],
        &["shell_exec", "read_file"],
        &ran,
        Some(policy),
    );
    let out = Runtime::new().run(&agent, "go").await.unwrap();
    assert_eq!(out.output.as_deref(), Some("ok"));
    assert_eq!(*ran.lock().unwrap(), ["read_file "]);
    let sent = results(&model);
    assert_eq!(sent[0].0, "shell_exec");
    assert!(sent[0].1, "a blocked call is an error result");
    assert!(
        sent[0].2.contains("denies `shell_exec`") && sent[0].2.contains("`shell*`"),
        "{}",
        sent[0].2
    );
    assert_eq!(sent[1], ("read_file".into(), false, "done".into()));
}

#[tokio::test]
async fn deny_unless_allowed_runs_only_what_the_allow_list_names_and_deny_wins() {
    let ran = Ran::default();
    let policy = ToolPolicy::deny_unless_allowed()
        .allow("read_*")
        .deny("read_secrets")
        .build()
        .unwrap();
    let (agent, model) = agent_calling(
        vec![
            ("read_file", json!({})),
            ("write_file", json!({})),
            ("read_secrets", json!({})),
        ],
        &["read_file", "write_file", "read_secrets"],
        &ran,
        Some(policy),
    );
    Runtime::new().run(&agent, "go").await.unwrap();
    assert_eq!(*ran.lock().unwrap(), ["read_file "]);
    let sent = results(&model);
    assert!(!sent[0].1);
    assert!(
        sent[1].1
            && sent[1]
                .2
                .contains("does not allow `write_file` (allowed: read_*)"),
        "{}",
        sent[1].2
    );
    assert!(
        sent[2].1 && sent[2].2.contains("denies `read_secrets`"),
        "{}",
        sent[2].2
    );
}

#[tokio::test]
async fn an_argument_rule_blocks_a_matching_call_only() {
    let ran = Ran::default();
    let policy = ToolPolicy::allow_by_default()
        .rule(ArgRule::new("shell", "/command").must_not_match(r"\brm\s+-rf\b"))
        .rule(ArgRule::new("shell", "/command").must_match(r"^[a-z]"))
        .build()
        .unwrap();
    let (agent, model) = agent_calling(
        vec![
            ("shell", json!({"command": "ls -la"})),
            ("shell", json!({"command": "rm -rf /"})),
            ("shell", json!({"command": "./run.sh"})),
        ],
        &["shell"],
        &ran,
        Some(policy),
    );
    Runtime::new().run(&agent, "go").await.unwrap();
    assert_eq!(*ran.lock().unwrap(), ["shell ls -la"]);
    let sent = results(&model);
    assert!(
        sent[1].1 && sent[1].2.contains("argument /command matches"),
        "{}",
        sent[1].2
    );
    assert!(
        sent[2].1 && sent[2].2.contains("must match `^[a-z]`"),
        "{}",
        sent[2].2
    );
}

#[tokio::test]
async fn a_runtime_policy_reaches_sub_agents_and_runs_before_other_hooks() {
    let ran = Ran::default();
    let child_model = ScriptedModel::new()
        .tool_call("shell", json!({"command": "ls"}))
        .text("child done");
    let child = Agent::builder("child")
        .description("Runs commands.")
        .model(child_model.clone())
        .tool(recording("shell", &ran))
        .build()
        .unwrap();
    let seen_by_later_hook = Ran::default();
    let seen = seen_by_later_hook.clone();
    let parent = Agent::builder("parent")
        .model(
            ScriptedModel::new()
                .tool_call("child", json!({"input": "list files"}))
                .text("ok"),
        )
        .sub_agent(&child)
        .build()
        .unwrap();
    let runtime = Runtime::new()
        .with(
            ToolPolicy::deny_unless_allowed()
                .allow("child")
                .build()
                .unwrap(),
        )
        .with(on_sync::before_tool(move |ev, _| {
            seen.lock().unwrap().push(ev.name().to_string());
            Ok(())
        }));
    runtime.run(&parent, "go").await.unwrap();
    assert!(
        ran.lock().unwrap().is_empty(),
        "the child's shell call was blocked"
    );
    // The policy (priority 200) decided first; the later hook saw both calls, the blocked one
    // read-only, and could not undo the block.
    assert_eq!(*seen_by_later_hook.lock().unwrap(), ["child", "shell"]);
    let sent = results(&child_model);
    assert!(
        sent[0].1 && sent[0].2.contains("does not allow `shell`"),
        "{}",
        sent[0].2
    );
}

#[test]
fn bad_patterns_are_errors_that_name_them() {
    let err = ToolPolicy::allow_by_default()
        .deny("read_[")
        .build()
        .unwrap_err();
    assert!(matches!(err, ToolPolicyError::Pattern { .. }));
    assert!(err.to_string().contains("`read_[`"), "{err}");
    let err = ToolPolicy::allow_by_default()
        .rule(ArgRule::new("shell", "/command").must_not_match("("))
        .build()
        .unwrap_err();
    assert!(matches!(err, ToolPolicyError::Regex { .. }), "{err}");
}
