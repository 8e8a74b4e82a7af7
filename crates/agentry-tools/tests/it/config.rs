//! Building tools by name from configuration options, and the errors for bad ones.

use crate::common::{Sandbox, call};
use agentry::prelude::*;
use agentry_tools::{Error, NAMES, builtin, options_schema, read_only};

#[test]
fn every_name_builds_with_default_options_and_approval_defaults() {
    let sb = Sandbox::new();
    for name in NAMES {
        for options in [Value::Null, json!({})] {
            let tool = builtin(name, &options, &sb.ws).unwrap();
            assert_eq!(tool.spec().name, *name);
            let writes = matches!(*name, "Bash" | "Write" | "Edit");
            assert_eq!(tool.needs_approval(), writes, "{name}");
        }
        assert!(options_schema(name).is_some(), "{name}");
    }
    assert_eq!(read_only(), ["Read", "Glob", "Grep"]);
    assert!(read_only().iter().all(|n| NAMES.contains(n)));
}

#[test]
fn approval_is_configurable_both_ways() {
    let sb = Sandbox::new();
    let bash = builtin("Bash", &json!({"approval": false}), &sb.ws).unwrap();
    assert!(!bash.needs_approval());
    let read = builtin("Read", &json!({"approval": true}), &sb.ws).unwrap();
    assert!(read.needs_approval());
}

#[tokio::test]
async fn options_take_effect() {
    let sb = Sandbox::new();
    let bash = builtin(
        "Bash",
        &json!({"timeout_ms": 200, "output_cap": 10, "shell": "/bin/sh"}),
        &sb.ws,
    )
    .unwrap();
    let err = call(bash.as_ref(), json!({"command": "sleep 5"}))
        .await
        .unwrap_err();
    assert!(err.contains("timed out after 200 ms"), "{err}");
    let out = call(bash.as_ref(), json!({"command": "echo 0123456789abcdef"}))
        .await
        .unwrap();
    assert!(out.contains("bytes of output cut"), "{out}");
    sb.file("a.txt", "1\n2\n3\n");
    let read = builtin("Read", &json!({"max_lines": 1}), &sb.ws).unwrap();
    let out = call(read.as_ref(), json!({"file_path": "a.txt"}))
        .await
        .unwrap();
    assert!(out.starts_with("     1\t1\n[stopped at line 1"), "{out}");
}

#[test]
fn an_unknown_tool_names_the_ones_there_are() {
    let sb = Sandbox::new();
    let err = builtin("Bsh", &Value::Null, &sb.ws).err().unwrap();
    assert!(matches!(err, Error::UnknownTool { .. }));
    assert_eq!(
        err.to_string(),
        "there is no built-in tool `Bsh`; the built-in tools are: Bash, Read, Write, Edit, Glob, Grep, WebFetch"
    );
    assert!(options_schema("Bsh").is_none());
}

#[test]
fn an_unknown_option_names_the_tool_the_option_and_what_is_allowed() {
    let sb = Sandbox::new();
    let err = builtin("Bash", &json!({"timout_ms": 5}), &sb.ws)
        .err()
        .unwrap();
    let msg = err.to_string();
    assert!(msg.contains("built-in tool `Bash`"), "{msg}");
    assert!(msg.contains("unknown field `timout_ms`"), "{msg}");
    assert!(msg.contains("the allowed options are:"), "{msg}");
    assert!(
        msg.contains("`timeout_ms`") && msg.contains("`output_cap`"),
        "{msg}"
    );
    let err = builtin("Write", &json!({"approval": "no"}), &sb.ws)
        .err()
        .unwrap();
    let msg = err.to_string();
    assert!(msg.contains("built-in tool `Write`"), "{msg}");
    assert!(
        msg.contains("option `approval`: invalid type: string \"no\", expected a boolean"),
        "{msg}"
    );
    let err = builtin("Read", &json!({"max_lines": 5, "max_bytes": -1}), &sb.ws)
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("option `max_bytes`: invalid value"),
        "{err}"
    );
    let err = builtin("Glob", &json!([1]), &sb.ws).err().unwrap();
    let msg = err.to_string();
    assert!(msg.contains("built-in tool `Glob`"), "{msg}");
    assert!(msg.contains("must be an object"), "{msg}");
    assert!(msg.contains("`max_results`"), "{msg}");
}

#[test]
fn an_unusable_value_says_what_is_allowed() {
    let sb = Sandbox::new();
    let err = builtin("Bash", &json!({"timeout_ms": 0}), &sb.ws)
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "the option `timeout_ms` of the built-in tool `Bash` is invalid: it is 0; give a positive number"
    );
    let err = builtin(
        "Bash",
        &json!({"timeout_ms": 9000, "max_timeout_ms": 1000}),
        &sb.ws,
    )
    .err()
    .unwrap();
    assert!(
        err.to_string()
            .contains("more than `max_timeout_ms` (1000)"),
        "{err}"
    );
    let err = builtin("Glob", &json!({"max_results": 0}), &sb.ws)
        .err()
        .unwrap();
    assert!(err.to_string().contains("give at least 1"), "{err}");
}

#[test]
fn the_options_schemas_describe_the_options_and_forbid_others() {
    let schema = options_schema("Bash").unwrap();
    assert_eq!(schema["additionalProperties"], json!(false));
    for key in [
        "approval",
        "timeout_ms",
        "max_timeout_ms",
        "output_cap",
        "shell",
    ] {
        assert!(schema["properties"][key].is_object(), "{key}: {schema}");
    }
    let schema = options_schema("WebFetch").unwrap();
    assert!(schema["properties"]["max_bytes"]["description"].is_string());
}
