//! A2A protocol 0.3 beside 1.0, at the same endpoint: clients of 0.3 (`message/send`,
//! `message/stream`, `tasks/get`, `tasks/cancel`) are answered by the same handlers, their
//! results turned into 0.3's shapes (`kind` discriminators, lower-case task states and roles,
//! file parts under `file`, status updates with `final`). A 0.3 request's parts are read as they
//! come: text, data and file parts carry what the handlers read under the same keys.

use serde_json::{Map, Value, json};

/// The version the card's 0.3 interface states.
pub(super) const VERSION: &str = "0.3.0";

/// The 1.0 method a 0.3 method is.
pub(super) fn method(legacy: &str) -> Option<&'static str> {
    Some(match legacy {
        "message/send" => "SendMessage",
        "message/stream" => "SendStreamingMessage",
        "tasks/get" => "GetTask",
        "tasks/cancel" => "CancelTask",
        _ => return None,
    })
}

/// A 0.3 request's params as 1.0 reads them: `configuration.blocking: false` is 1.0's
/// `returnImmediately`.
pub(super) fn params(mut params: Value) -> Value {
    if params["configuration"]["blocking"] == false {
        params["configuration"]["returnImmediately"] = Value::Bool(true);
    }
    params
}

/// A result of `method` (1.0) in 0.3's shape: `SendMessage`'s `{"task": ..}` or
/// `{"message": ..}` is the task or message itself; a task is a task.
pub(super) fn result(method: &str, result: Value) -> Value {
    match method {
        "SendMessage" | "SendStreamingMessage" => stream_result(result),
        _ => task(result),
    }
}

/// One event of a 1.0 stream (`task`, `message`, `statusUpdate`, `artifactUpdate`) in 0.3's
/// shape.
pub(super) fn stream_result(result: Value) -> Value {
    let Value::Object(mut one) = result else {
        return result;
    };
    if let Some(t) = one.remove("task") {
        return task(t);
    }
    if let Some(m) = one.remove("message") {
        return message(m);
    }
    if let Some(Value::Object(mut update)) = one.remove("statusUpdate") {
        let status = status(update.remove("status").unwrap_or(Value::Null));
        let last = matches!(
            status["state"].as_str(),
            Some(
                "completed"
                    | "canceled"
                    | "failed"
                    | "rejected"
                    | "input-required"
                    | "auth-required"
            )
        );
        update.insert("kind".into(), "status-update".into());
        update.insert("status".into(), status);
        update.insert("final".into(), last.into());
        return Value::Object(update);
    }
    if let Some(Value::Object(mut update)) = one.remove("artifactUpdate") {
        if let Some(a) = update.remove("artifact") {
            update.insert("artifact".into(), artifact(a));
        }
        update.insert("kind".into(), "artifact-update".into());
        return Value::Object(update);
    }
    Value::Object(one)
}

fn task(task: Value) -> Value {
    let Value::Object(mut t) = task else {
        return task;
    };
    t.insert("kind".into(), "task".into());
    if let Some(s) = t.remove("status") {
        t.insert("status".into(), status(s));
    }
    map_list(&mut t, "artifacts", artifact);
    map_list(&mut t, "history", message);
    Value::Object(t)
}

fn map_list(object: &mut Map<String, Value>, key: &str, f: fn(Value) -> Value) {
    if let Some(Value::Array(items)) = object.remove(key) {
        object.insert(key.into(), items.into_iter().map(f).collect());
    }
}

fn status(status: Value) -> Value {
    let Value::Object(mut s) = status else {
        return status;
    };
    let state = s["state"].as_str().map_or("unknown", state);
    s.insert("state".into(), state.into());
    if let Some(m) = s.remove("message") {
        s.insert("message".into(), message(m));
    }
    Value::Object(s)
}

/// A 1.0 task state (`TASK_STATE_INPUT_REQUIRED`) as 0.3 names it (`input-required`).
fn state(state: &str) -> &'static str {
    match state {
        "TASK_STATE_SUBMITTED" => "submitted",
        "TASK_STATE_WORKING" => "working",
        "TASK_STATE_INPUT_REQUIRED" => "input-required",
        "TASK_STATE_COMPLETED" => "completed",
        "TASK_STATE_CANCELED" => "canceled",
        "TASK_STATE_FAILED" => "failed",
        "TASK_STATE_REJECTED" => "rejected",
        "TASK_STATE_AUTH_REQUIRED" => "auth-required",
        _ => "unknown",
    }
}

fn message(message: Value) -> Value {
    let Value::Object(mut m) = message else {
        return message;
    };
    m.insert("kind".into(), "message".into());
    let role = match m["role"].as_str() {
        Some("ROLE_USER") => "user",
        _ => "agent",
    };
    m.insert("role".into(), role.into());
    map_list(&mut m, "parts", part);
    Value::Object(m)
}

fn artifact(artifact: Value) -> Value {
    let Value::Object(mut a) = artifact else {
        return artifact;
    };
    map_list(&mut a, "parts", part);
    Value::Object(a)
}

/// A 1.0 part (`text`, `data`, `raw` or `url` with `mediaType` and `filename`) as 0.3's
/// (`kind` `text`, `data`, or `file` with `bytes` or `uri`, `mimeType` and `name`). 0.3's data
/// is an object: other data is wrapped as `{"value": ..}`, marked as 0.3 clients expect.
fn part(part: Value) -> Value {
    let Value::Object(mut p) = part else {
        return part;
    };
    let mut out = Map::new();
    let mut metadata = p.remove("metadata");
    if let Some(text) = p.remove("text") {
        out.insert("kind".into(), "text".into());
        out.insert("text".into(), text);
    } else if let Some(data) = p.remove("data") {
        out.insert("kind".into(), "data".into());
        let data = match data {
            Value::Object(_) => data,
            other => {
                let mut meta = match metadata.take() {
                    Some(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                meta.insert("data_part_compat".into(), true.into());
                metadata = Some(Value::Object(meta));
                json!({"value": other})
            }
        };
        out.insert("data".into(), data);
    } else {
        let mut file = Map::new();
        if let Some(raw) = p.remove("raw") {
            file.insert("bytes".into(), raw);
        } else if let Some(url) = p.remove("url") {
            file.insert("uri".into(), url);
        }
        if let Some(media_type) = p.remove("mediaType") {
            file.insert("mimeType".into(), media_type);
        }
        if let Some(name) = p.remove("filename") {
            file.insert("name".into(), name);
        }
        out.insert("kind".into(), "file".into());
        out.insert("file".into(), Value::Object(file));
    }
    if let Some(metadata) = metadata {
        out.insert("metadata".into(), metadata);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_takes_the_shape_of_0_3() {
        let v1 = json!({"id": "r1", "contextId": "c1",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {"messageId": "s", "role": "ROLE_AGENT",
                "parts": [{"text": "approve?"}, {"data": {"pending": []}}]}},
            "artifacts": [{"artifactId": "answer", "parts": [{"data": [1, 2]}, {"raw": "aGk=", "mediaType": "text/plain", "filename": "a.txt"}]}],
            "history": [{"messageId": "h", "role": "ROLE_USER", "parts": [{"url": "https://x/y.png", "mediaType": "image/png"}]}]});
        let t = result("GetTask", v1);
        assert_eq!(t["kind"], "task");
        assert_eq!(t["status"]["state"], "input-required");
        assert_eq!(t["status"]["message"]["kind"], "message");
        assert_eq!(t["status"]["message"]["role"], "agent");
        assert_eq!(
            t["status"]["message"]["parts"][0],
            json!({"kind": "text", "text": "approve?"})
        );
        assert_eq!(
            t["status"]["message"]["parts"][1],
            json!({"kind": "data", "data": {"pending": []}})
        );
        assert_eq!(
            t["artifacts"][0]["parts"][0],
            json!({"kind": "data", "data": {"value": [1, 2]}, "metadata": {"data_part_compat": true}})
        );
        assert_eq!(
            t["artifacts"][0]["parts"][1],
            json!({"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "a.txt"}})
        );
        assert_eq!(t["history"][0]["role"], "user");
        assert_eq!(
            t["history"][0]["parts"][0],
            json!({"kind": "file", "file": {"uri": "https://x/y.png", "mimeType": "image/png"}})
        );
    }

    #[test]
    fn stream_events_take_the_shape_of_0_3() {
        let update = stream_result(
            json!({"statusUpdate": {"taskId": "r", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}),
        );
        assert_eq!(
            update,
            json!({"kind": "status-update", "taskId": "r", "contextId": "c", "status": {"state": "working"}, "final": false})
        );
        let last = stream_result(
            json!({"statusUpdate": {"taskId": "r", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        );
        assert_eq!(last["final"], true);
        let chunk = stream_result(
            json!({"artifactUpdate": {"taskId": "r", "contextId": "c", "append": true, "lastChunk": false,
            "artifact": {"artifactId": "text-1", "parts": [{"text": "hi"}]}}}),
        );
        assert_eq!(chunk["kind"], "artifact-update");
        assert_eq!(
            chunk["artifact"]["parts"][0],
            json!({"kind": "text", "text": "hi"})
        );
        assert_eq!(
            stream_result(json!({"task": {"id": "r", "status": {"state": "TASK_STATE_WORKING"}}}))
                ["kind"],
            "task"
        );
    }

    #[test]
    fn a_0_3_request_that_does_not_block_returns_at_once() {
        let p = params(json!({"message": {}, "configuration": {"blocking": false}}));
        assert_eq!(p["configuration"]["returnImmediately"], true);
        let p = params(json!({"message": {}}));
        assert!(p["configuration"]["returnImmediately"].is_null());
        assert_eq!(method("message/stream"), Some("SendStreamingMessage"));
        assert_eq!(method("SendMessage"), None);
    }
}
