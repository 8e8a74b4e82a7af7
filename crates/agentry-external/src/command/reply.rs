//! What a command said, read as Claude Code reads it: the exit code, then stdout's JSON (or
//! plain text), then stderr.

use super::accepts::{Accepts, accepts};
use super::process::Finished;
use crate::claude::EventName;
use serde_json::{Map, Value};

/// A PreToolUse permission decision; merged most restrictive first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Permission {
    Allow,
    Ask,
    Defer,
    Deny,
}

/// A PermissionRequest decision.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PermissionReply {
    pub(crate) allow: bool,
    pub(crate) message: Option<String>,
    pub(crate) interrupt: bool,
    pub(crate) updated_input: Option<Value>,
}

/// What one command asked for.
#[derive(Clone, Debug, Default)]
pub(crate) struct Verdict {
    /// PreToolUse's permission decision, and its reason.
    pub(crate) permission: Option<(Permission, Option<String>)>,
    /// A block (exit 2, or `decision: "block"`), with the reason.
    pub(crate) block: Option<String>,
    pub(crate) updated_input: Option<Value>,
    /// Context for the model (`additionalContext`, plain stdout where it counts, or stderr of a
    /// blocking exit after a tool ran).
    pub(crate) context: Option<String>,
    /// `continue: false`: stop the run, with this reason.
    pub(crate) stop: Option<String>,
    pub(crate) system_message: Option<String>,
    /// PostToolUse's replacement for what the model sees.
    pub(crate) updated_output: Option<Value>,
    pub(crate) permission_request: Option<PermissionReply>,
    /// Fields this event does not allow, which were ignored.
    pub(crate) violations: Vec<String>,
}

/// Output that is not the protocol, or a command that failed: a non-blocking error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReplyError {
    #[error("exited with status {code} (a non-blocking error){}", stderr_line(.stderr))]
    Status { code: i32, stderr: String },
    #[error("was killed by signal {0}")]
    Signal(i32),
    #[error(
        "printed stdout that starts with `{{` but is not valid JSON ({0}); hook output must be the protocol's JSON object or plain text"
    )]
    NotJson(String),
    #[error("printed JSON that does not follow the protocol: {0}")]
    Schema(String),
}

fn stderr_line(stderr: &str) -> String {
    match stderr.lines().find(|l| !l.trim().is_empty()) {
        Some(line) => format!(": {}", line.trim()),
        None => String::new(),
    }
}

/// Reads what a finished command said on `event`.
pub(crate) fn read(event: EventName, done: &Finished) -> Result<Verdict, ReplyError> {
    let can = accepts(event);
    let trimmed = done.stdout.trim_start();
    let json = if trimmed.starts_with('{') {
        match serde_json::from_str::<Value>(trimmed) {
            Ok(Value::Object(map)) => Some(Ok(map)),
            Ok(_) => unreachable!("text starting with `{{` parses as an object or fails"),
            Err(e) => Some(Err(ReplyError::NotJson(e.to_string()))),
        }
    } else {
        None
    };
    match done.code {
        Some(2) => {
            // A blocking error: blocks where the event can block, even when the JSON is invalid
            // or says "allow"; the JSON's reason, else stderr, is the message.
            let mut verdict = match json {
                Some(Ok(map)) => parse(event, can, &map).unwrap_or_default(),
                _ => Verdict::default(),
            };
            let message = verdict
                .block
                .take()
                .or_else(|| verdict.permission.take().and_then(|(_, r)| r))
                .unwrap_or_else(|| done.stderr.trim().to_string());
            if can.blocks {
                match event {
                    // The tool already ran: stderr goes to the model beside its result.
                    EventName::PostToolUse | EventName::PostToolUseFailure => {
                        verdict.context = Some(message)
                    }
                    EventName::PreToolUse => {
                        verdict.permission = Some((Permission::Deny, Some(message)))
                    }
                    _ => verdict.block = Some(message),
                }
            }
            Ok(verdict)
        }
        Some(0) => match json {
            Some(Ok(map)) => parse(event, can, &map),
            Some(Err(e)) => Err(e),
            None => {
                let text = done.stdout.trim();
                Ok(Verdict {
                    context: (can.plain_context && !text.is_empty()).then(|| text.to_string()),
                    ..Verdict::default()
                })
            }
        },
        // Any other status: a valid JSON object alone decides; otherwise a non-blocking error.
        code => match json {
            Some(Ok(map)) => parse(event, can, &map),
            _ => Err(match (code, done.signal) {
                (Some(code), _) => ReplyError::Status {
                    code,
                    stderr: done.stderr.clone(),
                },
                (None, Some(signal)) => ReplyError::Signal(signal),
                (None, None) => ReplyError::Signal(0),
            }),
        },
    }
}

fn string(map: &Map<String, Value>, key: &str) -> Result<Option<String>, ReplyError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ReplyError::Schema(format!(
            "`{key}` must be a string, not {other}"
        ))),
    }
}

/// Reads a JSON reply; a field the event does not take is noted as a violation and ignored.
fn parse(event: EventName, can: Accepts, map: &Map<String, Value>) -> Result<Verdict, ReplyError> {
    let mut v = Verdict::default();
    let refuse = |field: &str, v: &mut Verdict| {
        v.violations
            .push(format!("`{field}` is not allowed on {event}; ignored"));
    };
    match map.get("continue") {
        None | Some(Value::Null) | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => {
            v.stop = Some(
                string(map, "stopReason")?
                    .unwrap_or_else(|| format!("a {event} hook asked the run to stop")),
            )
        }
        Some(other) => {
            return Err(ReplyError::Schema(format!(
                "`continue` must be true or false, not {other}"
            )));
        }
    }
    v.system_message = string(map, "systemMessage")?;
    let reason = string(map, "reason")?;
    match string(map, "decision")?.as_deref() {
        None => {}
        Some("approve") if event == EventName::PreToolUse => {
            v.permission = Some((Permission::Allow, reason.clone()))
        }
        // The legacy "approve" elsewhere: no objection.
        Some("approve") => {}
        Some("block") if !can.decision => refuse("decision", &mut v),
        Some("block") if event == EventName::PreToolUse => {
            v.permission = Some((
                Permission::Deny,
                Some(reason.clone().unwrap_or_else(|| "blocked by a hook".into())),
            ))
        }
        Some("block") => {
            v.block = Some(
                reason
                    .clone()
                    .unwrap_or_else(|| format!("blocked by a {event} hook")),
            )
        }
        Some(other) => {
            return Err(ReplyError::Schema(format!(
                "`decision` must be \"block\" (or the legacy \"approve\"), not \"{other}\""
            )));
        }
    }
    let Some(specific) = map.get("hookSpecificOutput") else {
        return Ok(v);
    };
    let Some(specific) = specific.as_object() else {
        return Err(ReplyError::Schema(
            "`hookSpecificOutput` must be an object".into(),
        ));
    };
    match string(specific, "hookEventName")? {
        None => {
            return Err(ReplyError::Schema(format!(
                "`hookSpecificOutput` must carry `hookEventName` (\"{event}\")"
            )));
        }
        Some(name) if name != event.name() => {
            return Err(ReplyError::Schema(format!(
                "`hookSpecificOutput.hookEventName` is \"{name}\" on a {event} hook"
            )));
        }
        Some(_) => {}
    }
    if let Some(decision) = string(specific, "permissionDecision")? {
        if !can.permission {
            refuse("permissionDecision", &mut v);
        } else {
            let p = match decision.as_str() {
                "allow" => Permission::Allow,
                "deny" => Permission::Deny,
                "ask" => Permission::Ask,
                "defer" => Permission::Defer,
                other => {
                    return Err(ReplyError::Schema(format!(
                        "`permissionDecision` must be allow, deny, ask or defer, not \"{other}\""
                    )));
                }
            };
            v.permission = Some((p, string(specific, "permissionDecisionReason")?));
        }
    }
    match specific.get("updatedInput") {
        None | Some(Value::Null) => {}
        Some(_) if !can.updated_input => refuse("updatedInput", &mut v),
        Some(input) => v.updated_input = Some(input.clone()),
    }
    if let Some(context) = string(specific, "additionalContext")? {
        if can.context {
            v.context = Some(context);
        } else {
            refuse("additionalContext", &mut v);
        }
    }
    for key in ["updatedToolOutput", "updatedMCPToolOutput"] {
        match specific.get(key) {
            None | Some(Value::Null) => {}
            Some(_) if !can.updated_output => refuse(key, &mut v),
            Some(output) => v.updated_output = Some(output.clone()),
        }
    }
    match specific.get("decision") {
        None | Some(Value::Null) => {}
        Some(_) if !can.permission_request => refuse("hookSpecificOutput.decision", &mut v),
        Some(Value::Object(d)) => {
            let allow = match string(d, "behavior")?.as_deref() {
                Some("allow") => true,
                Some("deny") => false,
                other => {
                    return Err(ReplyError::Schema(format!(
                        "`decision.behavior` must be allow or deny, not {other:?}"
                    )));
                }
            };
            v.permission_request = Some(PermissionReply {
                allow,
                message: string(d, "message")?,
                interrupt: d.get("interrupt") == Some(&Value::Bool(true)),
                updated_input: d.get("updatedInput").filter(|i| !i.is_null()).cloned(),
            });
        }
        Some(other) => {
            return Err(ReplyError::Schema(format!(
                "`hookSpecificOutput.decision` must be an object, not {other}"
            )));
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn done(code: i32, stdout: &str, stderr: &str) -> Finished {
        Finished {
            code: Some(code),
            signal: None,
            stdout: stdout.into(),
            stderr: stderr.into(),
            duration: Duration::ZERO,
        }
    }

    #[test]
    fn exit_2_blocks_with_stderr_or_the_json_reason() {
        let v = read(EventName::PreToolUse, &done(2, "", "no rm\n")).unwrap();
        assert_eq!(v.permission, Some((Permission::Deny, Some("no rm".into()))));
        let v = read(
            EventName::Stop,
            &done(2, r#"{"decision":"block","reason":"tests fail"}"#, "x"),
        )
        .unwrap();
        assert_eq!(v.block.as_deref(), Some("tests fail"));
        // Exit 2 with invalid JSON still blocks.
        let v = read(EventName::PreToolUse, &done(2, "{oops", "denied")).unwrap();
        assert_eq!(
            v.permission,
            Some((Permission::Deny, Some("denied".into())))
        );
        // Where nothing can be blocked, exit 2 does nothing.
        let v = read(EventName::Notification, &done(2, "", "x")).unwrap();
        assert!(v.block.is_none() && v.permission.is_none());
    }

    #[test]
    fn exit_0_json_across_lines_and_unknown_keys() {
        let out = "\n{\n \"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\",\n \"permissionDecision\": \"ask\", \"permissionDecisionReason\": \"sure?\"},\n \"extra\": 1}\n";
        let v = read(EventName::PreToolUse, &done(0, out, "")).unwrap();
        assert_eq!(v.permission, Some((Permission::Ask, Some("sure?".into()))));
    }

    #[test]
    fn plain_text_is_context_only_where_it_counts() {
        let v = read(
            EventName::UserPromptSubmit,
            &done(0, "today is Monday\n", ""),
        )
        .unwrap();
        assert_eq!(v.context.as_deref(), Some("today is Monday"));
        let v = read(EventName::PreToolUse, &done(0, "chatter", "")).unwrap();
        assert!(v.context.is_none());
    }

    #[test]
    fn broken_json_is_never_guessed_at() {
        let e = read(EventName::PreToolUse, &done(0, "{\"decision\": ", "")).unwrap_err();
        assert!(matches!(e, ReplyError::NotJson(_)), "{e}");
        let e = read(
            EventName::PreToolUse,
            &done(
                0,
                r#"{"hookSpecificOutput": {"permissionDecision": "deny"}}"#,
                "",
            ),
        )
        .unwrap_err();
        assert!(e.to_string().contains("hookEventName"), "{e}");
    }

    #[test]
    fn other_statuses_are_non_blocking_unless_json_decides() {
        let e = read(EventName::PreToolUse, &done(1, "", "\nboom\nmore")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "exited with status 1 (a non-blocking error): boom"
        );
        let v = read(
            EventName::PreToolUse,
            &done(1, r#"{"decision": "block", "reason": "r"}"#, ""),
        )
        .unwrap();
        assert_eq!(v.permission, Some((Permission::Deny, Some("r".into()))));
    }

    #[test]
    fn legacy_approve_and_fields_an_event_does_not_take() {
        let v = read(EventName::Stop, &done(0, r#"{"decision": "approve"}"#, "")).unwrap();
        assert!(v.block.is_none());
        let v = read(
            EventName::PostToolUse,
            &done(
                0,
                r#"{"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "deny", "updatedInput": {}}}"#,
                "",
            ),
        )
        .unwrap();
        assert!(v.permission.is_none() && v.updated_input.is_none());
        assert_eq!(v.violations.len(), 2, "{:?}", v.violations);
    }

    #[test]
    fn continue_false_stops() {
        let v = read(
            EventName::PostToolUse,
            &done(0, r#"{"continue": false, "stopReason": "budget"}"#, ""),
        )
        .unwrap();
        assert_eq!(v.stop.as_deref(), Some("budget"));
    }

    #[test]
    fn merge_order_is_most_restrictive_first() {
        assert!(Permission::Deny > Permission::Defer);
        assert!(Permission::Defer > Permission::Ask);
        assert!(Permission::Ask > Permission::Allow);
    }
}
