//! `.mcp.json` as Claude Code and Claude Desktop write it, read as it is.

use agentry_mcp::{McpConfig, McpServers, ServerKind, ServerSpec};
use std::time::Duration;

const CLAUDE_CODE: &str = r#"{
  "mcpServers": {
    "files": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
      "env": {"LOG_LEVEL": "debug"}
    },
    "stdio-typed": {"type": "stdio", "command": "python3", "args": ["server.py"]},
    "remote": {
      "type": "http",
      "url": "https://mcp.example.com/mcp",
      "headers": {"Authorization": "Bearer ${EXAMPLE_TOKEN}"},
      "timeoutMs": 5000,
      "toolTimeoutsMs": {"slow_search": 120000},
      "allowedTools": ["search*"],
      "deniedTools": ["search_private"]
    }
  }
}"#;

#[test]
fn a_claude_code_file_is_read_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".mcp.json");
    std::fs::write(&path, CLAUDE_CODE).unwrap();
    let config = McpConfig::load(&path).unwrap();
    let files = &config.mcp_servers["files"];
    assert!(!files.is_http());
    assert_eq!(files.command.as_deref(), Some("npx"));
    assert_eq!(files.args.len(), 3);
    assert_eq!(files.env["LOG_LEVEL"], "debug");
    assert_eq!(
        config.mcp_servers["stdio-typed"].kind,
        Some(ServerKind::Stdio)
    );
    let remote = &config.mcp_servers["remote"];
    assert!(remote.is_http());
    assert_eq!(remote.headers["Authorization"], "Bearer ${EXAMPLE_TOKEN}");
    assert_eq!(remote.call_timeout("search"), Duration::from_secs(5));
    assert_eq!(remote.call_timeout("slow_search"), Duration::from_secs(120));
    assert!(remote.offers("search_public"));
    assert!(!remote.offers("search_private"), "deny wins over allow");
    assert!(!remote.offers("delete_all"), "not allowed");
    // What is stored with a run is the file's own form: templates, not values.
    let again: McpConfig = serde_json::from_value(serde_json::to_value(&config).unwrap()).unwrap();
    assert_eq!(again, config);
    assert!(McpServers::new(config).is_ok());
}

#[test]
fn the_types_have_a_json_schema_for_larger_config_files() {
    let schema = serde_json::to_value(schemars::schema_for!(McpConfig)).unwrap();
    let text = schema.to_string();
    assert!(text.contains("mcpServers"), "{text}");
    assert!(text.contains("allowedTools"), "{text}");
}

#[test]
fn unusable_specs_are_errors_that_say_what_to_fix() {
    let e = McpConfig::parse(r#"{"mcpServers": {"a__b": {"command": "x"}}}"#, "inline")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`a__b`") && e.contains("must not contain `__`"),
        "{e}"
    );
    let e = McpConfig::parse(r#"{"mcpServers": {"web": {"type": "http"}}}"#, "inline")
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs a `url`"), "{e}");
    let e = McpConfig::parse(r#"{"mcpServers": {"x": {"args": ["a"]}}}"#, "inline")
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs a `command`"), "{e}");
    let e = McpConfig::parse(r#"{"mcpServers": []}"#, "settings.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("settings.json could not be read"), "{e}");
    assert!(McpServers::single("ok", ServerSpec::stdio("x")).is_ok());
}

#[tokio::test]
async fn a_missing_template_variable_names_the_variable_not_a_value() {
    let servers = McpServers::single(
        "remote",
        ServerSpec::http("http://127.0.0.1:9/mcp")
            .header("Authorization", "Bearer ${AGENTRY_MCP_SURELY_UNSET_TOKEN}"),
    )
    .unwrap();
    let e = servers.connect().await.unwrap_err().to_string();
    assert!(
        e.contains(
            "MCP server `remote` needs the environment variable `AGENTRY_MCP_SURELY_UNSET_TOKEN`"
        ),
        "{e}"
    );
    assert!(e.contains("header Authorization"), "{e}");
}
