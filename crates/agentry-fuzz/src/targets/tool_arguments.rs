//! A model's tool-call arguments, read as the runtime reads them before calling a tool: the
//! text parsed as JSON (empty text is no arguments), checked against the tool's compiled JSON
//! Schema, and, when they match, handed to the typed tool, which deserializes its input type.
//!
//! Input: a byte that picks the tool of an agent (typed tools with nested, optional, enum and
//! map fields, and a sub-agent), then the arguments text.

use agentry::{
    Agent, AgentTool, RunContextSpec, ScriptedModel, ToolCtx, ToolFailure, schema_violations, tool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// A booking: nested, optional, enum and numeric fields.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Booking {
    /// The city.
    city: String,
    /// Nights, at least one.
    #[schemars(range(min = 1, max = 30))]
    nights: u8,
    /// Who stays.
    #[serde(default)]
    guests: Vec<Guest>,
    /// Where.
    kind: Stay,
    /// The most to pay, per night.
    budget: Option<f64>,
    /// Free-form notes by topic.
    #[serde(default)]
    notes: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Guest {
    name: String,
    age: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "type")]
#[allow(dead_code)]
enum Stay {
    Hotel { stars: Option<u8> },
    Hostel,
    Apartment { floor: i32, lift: bool },
}

/// A command, as a shell tool takes it.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Command {
    command: String,
    /// Milliseconds.
    timeout: Option<u64>,
    description: Option<String>,
}

/// A tool without arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct Nothing {}

fn agent() -> &'static Agent {
    static AGENT: OnceLock<Agent> = OnceLock::new();
    AGENT.get_or_init(|| {
        let helper = Agent::builder("helper")
            .description("Answers questions")
            .model(ScriptedModel::new())
            .build()
            .expect("the sub-agent");
        Agent::builder("fuzz")
            .model(ScriptedModel::new())
            .tool(tool("book", "Books a stay", |_: Booking, _| async {
                Ok::<_, ToolFailure>("booked")
            }))
            .tool(tool("Bash", "Runs a command", |_: Command, _| async {
                Ok::<_, ToolFailure>("ran")
            }))
            .tool(tool("now", "The time", |_: Nothing, _| async {
                Ok::<_, ToolFailure>("noon")
            }))
            .sub_agent(&helper)
            .build()
            .expect("the agent")
    })
}

/// Checks the arguments `data` describes as the runtime does; panics if the validator's two
/// answers disagree, or if a tool whose schema accepted its input panics.
pub fn run(data: &[u8]) {
    let Some((&pick, arguments)) = data.split_first() else {
        return;
    };
    let def = agent().def();
    let tool = &def.tools[usize::from(pick) % def.tools.len()];
    let text = String::from_utf8_lossy(arguments);
    let raw = text.trim();
    let input = if raw.is_empty() {
        Value::Object(Default::default())
    } else {
        match serde_json::from_str::<Value>(raw) {
            Ok(input) => input,
            Err(_) => return,
        }
    };
    let violations = schema_violations(tool.validator(), &input);
    assert_eq!(
        violations.is_none(),
        tool.validator().is_valid(&input),
        "the validator's answers disagree on {input}: {violations:?}"
    );
    if violations.is_some() {
        return;
    }
    if let AgentTool::Tool { tool, .. } = tool {
        let name = tool.spec().name.clone();
        let ctx = ToolCtx::detached(RunContextSpec::new("run-fuzz", "fuzz"), &name);
        // A typed input the schema accepted may still not deserialize (the schema is looser
        // than the type: an integer's range); the model then gets the error. Only a panic is
        // a bug.
        let outcome = futures::executor::block_on(tool.call_ref(&input, ctx));
        crate::support::debug("tool_arguments", &outcome.map(|out| out.content));
    }
}
