//! What a hook changed: HookFinished names the fields of the event it changed, and `decision`
//! when it decided; a hook that only looked changed nothing.

use crate::common::*;
use agentry::Message;
use agentry::hooks::on_sync;
use agentry::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Path {
    path: String,
}

#[tokio::test]
async fn hook_finished_names_what_each_hook_changed_of_its_event() {
    let log = new_log();
    let seen = log.clone();
    let model = ScriptedModel::new()
        .tool_call("read", json!({"path": "/etc/passwd"}))
        .tool_call("delete", json!({"path": "/"}))
        .text("done");
    let agent = Agent::builder("worker")
        .model(model.clone())
        .tool(tool("read", "Reads.", |a: Path, _c: ToolCtx| async move {
            Ok(format!("read {}", a.path))
        }))
        .tool(tool(
            "delete",
            "Deletes.",
            |_: Path, _c: ToolCtx| async move { Ok("deleted") },
        ))
        .with(
            on::before_model(|mut ev, _| async move {
                ev.request.system = Some("Be brief.".into());
                Ok(ev)
            })
            .named("brief"),
        )
        .with(on::before_model(|ev, _| async move { Ok(ev) }).named("looker"))
        .with(
            on::before_tool(|mut ev, _| async move {
                match ev.name() {
                    "read" => ev.input = json!({"path": "/tmp/safe"}),
                    _ => ev.block("no deletes"),
                }
                Ok(ev)
            })
            .named("guard"),
        )
        .with(
            on::before_model(|mut ev, _| async move {
                if ev.request.messages.len() > 1 {
                    ev.request
                        .messages
                        .push(Message::user("(a note from a hook)"));
                }
                Ok(ev)
            })
            .named("noter"),
        )
        .build()
        .unwrap();
    let runtime = Runtime::new().with(on_sync::hook_finished(move |ev, _| {
        push(
            &seen,
            format!("{} {}: {}", ev.hook(), ev.event(), ev.changed().join(", ")),
        );
        Ok(())
    }));
    let out = runtime.run(&agent, "Tidy up.").await.unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));

    let lines = entries(&log);
    let of = |hook: &str| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l.starts_with(&format!("{hook} ")))
            .cloned()
            .collect()
    };
    assert_eq!(
        of("brief"),
        ["brief BeforeModel: system"; 3],
        "it set the system prompt on each call"
    );
    assert_eq!(of("looker"), ["looker BeforeModel: "; 3], "it only looked");
    assert_eq!(
        of("guard"),
        ["guard BeforeTool: tool_input", "guard BeforeTool: decision"]
    );
    assert_eq!(
        of("noter"),
        [
            "noter BeforeModel: ",
            "noter BeforeModel: messages",
            "noter BeforeModel: messages"
        ]
    );
    // What the hooks changed is what the model and the tool got.
    let requests = model.requests();
    assert_eq!(requests[0].system.as_deref(), Some("Be brief."));
    assert_eq!(
        requests[1].messages.last().unwrap().text(),
        "(a note from a hook)"
    );
}
