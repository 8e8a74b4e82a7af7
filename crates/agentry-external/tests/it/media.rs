//! Images and files through command hooks: a script gets each media part by reference (its
//! SHA-256, size and the path of a file holding the bytes, not base64 on stdin), a Claude Code
//! UserPromptSubmit script still gets `prompt` as text, and a script that answers with parts
//! (a new image by path, a part it was given by SHA-256) changes what the model sees.

use crate::common::*;
use agentry::content::Part;
use agentry::prelude::*;
use agentry::{Content, ToolFailure};

fn png(fill: u8) -> Part {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.resize(4_000, fill);
    Part::image(bytes, "image/png")
}

/// An agent with `shot`, a tool that answers with text and an image.
fn agent(model: &ScriptedModel) -> Agent {
    Agent::builder("viewer")
        .model(model.clone())
        .tool(tool(
            "shot",
            "Takes a screenshot",
            |_: Value, _ctx: ToolCtx| async move {
                Ok::<_, ToolFailure>(Content::from([Part::text("the screen:"), png(1)]))
            },
        ))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_prompts_image_reaches_a_claude_code_script_by_reference() {
    let p = Project::new();
    p.script(
        "see.py",
        r#"#!/usr/bin/env python3
import hashlib, json, os, sys
raw = sys.stdin.read()
d = json.loads(raw)
out = {"prompt": d["prompt"], "stdin_bytes": len(raw)}
for a in d["attachments"]:
    data = open(a["path"], "rb").read()
    out.setdefault("seen", []).append({
        "type": a["type"], "media_type": a["media_type"], "size": a["size"],
        "hash_ok": hashlib.sha256(data).hexdigest() == a["sha256"], "has_data": "data" in a,
    })
json.dump(out, open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "seen.json"), "w"))
"#,
    );
    let model = ScriptedModel::new().text("a screenshot");
    Runtime::new()
        .with(p.hooks(one("UserPromptSubmit", "", "python3 .claude/hooks/see.py")))
        .run(&agent(&model), [Part::text("what is this?"), png(7)])
        .await
        .unwrap();
    let seen = p.json("seen.json");
    assert_eq!(seen["prompt"], "what is this?", "{seen}");
    assert_eq!(
        seen["seen"],
        json!([{"type": "image", "media_type": "image/png", "size": 4000, "hash_ok": true, "has_data": false}])
    );
    assert!(
        seen["stdin_bytes"].as_u64().unwrap() < 4000,
        "no bytes on stdin: {seen}"
    );
}

#[tokio::test]
async fn a_script_replaces_a_tools_image_by_path_and_keeps_one_by_hash() {
    let p = Project::new();
    // The script writes a new image (the old one with its last byte changed, as a tool that
    // strips metadata would), and answers with the text, the new image by path, and the old one
    // by its hash.
    p.script(
        "strip.py",
        r#"#!/usr/bin/env python3
import json, os, sys
d = json.load(sys.stdin)
parts = d["content"]
image = next(p for p in parts if p["type"] == "image")
data = bytearray(open(image["path"], "rb").read())
data[-1] = 0x2A
new = os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "stripped.png")
open(new, "wb").write(bytes(data))
print(json.dumps({"hookSpecificOutput": {"hookEventName": "AfterTool", "updatedToolOutput": [
    {"type": "text", "text": "the screen, stripped:"},
    {"type": "image", "path": new},
    {"type": "image", "media_type": "image/png", "sha256": image["sha256"], "size": image["size"]},
]}}))
"#,
    );
    let model = ScriptedModel::new()
        .tool_call("shot", json!({}))
        .text("done")
        .record_requests(true);
    Runtime::new()
        .with(p.hooks(one("AfterTool", "shot", "python3 .claude/hooks/strip.py")))
        .run(&agent(&model), "look")
        .await
        .unwrap();
    let result = model.requests()[1]
        .messages
        .last()
        .unwrap()
        .tool_result()
        .unwrap()
        .clone();
    let parts = result.content.parts();
    assert_eq!(parts.len(), 3, "{:?}", result.content);
    assert_eq!(parts[0], Part::text("the screen, stripped:"));
    let stripped = parts[1].media().unwrap();
    assert_eq!(stripped.media_type, "image/png");
    assert_eq!(stripped.data().unwrap().last(), Some(&0x2A));
    assert_eq!(
        parts[2],
        png(1),
        "the part given back by hash, bytes and all"
    );
}

#[tokio::test]
async fn the_transcript_holds_image_blocks_as_claude_code_writes_them() {
    let p = Project::new();
    // A Stop script copies the transcript, as scripts that read it do.
    let copy = r#"cp "$(jq -r .transcript_path)" "$CLAUDE_PROJECT_DIR/transcript.jsonl""#;
    let model = ScriptedModel::new()
        .tool_call("shot", json!({}))
        .text("done");
    Runtime::new()
        .with(p.hooks(one("Stop", "", copy)))
        .run(&agent(&model), [Part::text("look"), png(7)])
        .await
        .unwrap();
    let lines: Vec<Value> = p
        .read("transcript.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let user = lines.iter().find(|l| l["type"] == "user").unwrap();
    let image = &user["message"]["content"][1];
    assert_eq!(image["type"], "image", "{user}");
    assert_eq!(image["source"]["type"], "base64");
    assert_eq!(image["source"]["media_type"], "image/png");
    assert_eq!(
        image["source"]["data"].as_str().unwrap().len(),
        5336,
        "4,000 bytes as base64"
    );
    // The tool's image, inside its tool_result block.
    let result = lines
        .iter()
        .find(|l| l["message"]["content"][0]["type"] == "tool_result")
        .unwrap();
    let blocks = &result["message"]["content"][0]["content"];
    assert_eq!(blocks[0], json!({"type": "text", "text": "the screen:"}));
    assert_eq!(blocks[1]["type"], "image");
}
