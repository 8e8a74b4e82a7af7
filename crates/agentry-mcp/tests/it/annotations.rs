//! A tool's annotations mean what the MCP specification says when hints are left out: not
//! read-only, destructive, not idempotent, open-world. Every combination of the two hints that
//! decide "destructive" (left out, false, true), and a tool with no annotations at all, through
//! `ToolPolicy::for_mcp()` and the info hooks see.

use crate::common;

use agentry::ScriptedModel;
use agentry::ToolAnnotations;
use agentry::builtins::ToolPolicy;
use agentry::prelude::*;
use serde_json::{Map, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[tokio::test]
async fn unannotated_tools_are_destructive_and_each_hint_combination_is_judged_by_the_spec() {
    let hints = [None, Some(false), Some(true)];
    let label = |h: Option<bool>| match h {
        None => "unset",
        Some(false) => "false",
        Some(true) => "true",
    };
    let mut tools = vec![json!({"name": "bare", "inputSchema": {"type": "object"}})];
    let mut expected_pending = vec!["mcp__hints__bare".to_string()];
    for read_only in hints {
        for destructive in hints {
            let name = format!("ro_{}_d_{}", label(read_only), label(destructive));
            let mut annotations = Map::new();
            if let Some(v) = read_only {
                annotations.insert("readOnlyHint".into(), v.into());
            }
            if let Some(v) = destructive {
                annotations.insert("destructiveHint".into(), v.into());
            }
            tools.push(json!({
                "name": name,
                "inputSchema": {"type": "object"},
                "annotations": annotations,
            }));
            if read_only != Some(true) && destructive != Some(false) {
                expected_pending.push(format!("mcp__hints__{name}"));
            }
        }
    }
    let Some(spec) = common::raw(
        "unannotated_tools_are_destructive_and_each_hint_combination_is_judged_by_the_spec",
        json!({ "tools": tools }),
    ) else {
        return;
    };
    let servers = agentry_mcp::McpServers::single("hints", spec).unwrap();
    let names: Vec<String> = tools
        .iter()
        .map(|t| format!("mcp__hints__{}", t["name"].as_str().unwrap()))
        .collect();
    let model = ScriptedModel::new()
        .tool_calls(names.iter().map(|n| (n.clone(), json!({}))))
        .text("done");
    let infos: Arc<Mutex<BTreeMap<String, ToolAnnotations>>> = Arc::default();
    let log = infos.clone();
    let agent = Agent::builder("assistant")
        .model(model)
        // Before the policy (priority 200), whose request for approval ends the chain.
        .with(
            on::before_tool(move |ev, _ctx| {
                let log = log.clone();
                async move {
                    let annotations = ev.tool_info().and_then(|i| i.annotations.clone());
                    log.lock()
                        .unwrap()
                        .insert(ev.name().to_string(), annotations.unwrap_or_default());
                    Ok(ev)
                }
            })
            .priority(300),
        )
        .with(ToolPolicy::for_mcp().build().unwrap())
        .build()
        .unwrap();
    let out = common::run_on(&agent, &servers).await.unwrap();
    let StopReason::AwaitingApproval { pending } = &out.stop else {
        panic!("destructive calls wait for approval: {:?}", out.stop);
    };
    let mut pending: Vec<String> = pending.iter().map(|p| p.tool.clone()).collect();
    pending.sort();
    expected_pending.sort();
    assert_eq!(pending, expected_pending);

    // Hooks see every hint filled in by the specification's defaults.
    let infos = infos.lock().unwrap().clone();
    assert_eq!(
        infos["mcp__hints__bare"],
        ToolAnnotations {
            title: None,
            read_only_hint: Some(false),
            destructive_hint: Some(true),
            idempotent_hint: Some(false),
            open_world_hint: Some(true),
        }
    );
    assert_eq!(
        infos["mcp__hints__ro_true_d_unset"].read_only_hint,
        Some(true)
    );
    assert_eq!(
        infos["mcp__hints__ro_true_d_unset"].destructive_hint,
        Some(true),
        "destructive by default, and harmless since it is read-only"
    );
    assert_eq!(infos.len(), names.len());
    servers.shutdown().await;
}
