//! Tools that are Rust types (`StructTool`): the spec derived once per type, the input read
//! (in place for `call_ref`), a bad input's failure, and the settings passed on to `Tool`.

use agentry_core::{Json, RunContextSpec, StructTool, Tool, ToolCtx, ToolFailure, ToolInfo};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn ctx(tool: &str) -> ToolCtx {
    ToolCtx::detached(
        RunContextSpec {
            step: 1,
            ..RunContextSpec::new("run-1", "a")
        },
        tool,
    )
}

/// The input of [`Greet`]: written for Rust readers, not for the model.
#[derive(Deserialize, JsonSchema)]
struct GreetInput {
    /// Who to greet.
    name: String,
    /// How many times.
    #[serde(default)]
    times: Option<u32>,
}

/// Greets, counting its runs; its settings are fields.
#[derive(Default)]
struct Greet {
    runs: AtomicUsize,
    approval: bool,
}

impl StructTool for Greet {
    type Input = GreetInput;
    type Output = String;
    const NAME: &'static str = "greet";
    const DESCRIPTION: &'static str = "Greets someone.";

    async fn run(&self, input: GreetInput, ctx: ToolCtx) -> Result<String, ToolFailure> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if input.name.is_empty() {
            return Err("the name is empty".into());
        }
        let times = input.times.unwrap_or(1) as usize;
        Ok(format!(
            "{} (call {})",
            vec![format!("Hello, {}!", input.name); times].join(" "),
            ctx.call_id()
        ))
    }

    fn needs_approval(&self) -> bool {
        self.approval
    }
}

/// The input of [`Echo`].
#[derive(Deserialize, JsonSchema)]
struct EchoInput {
    /// What to echo.
    text: String,
}

/// Another type, with the defaults: its own spec, no approval, no timeout, no info.
struct Echo;

impl StructTool for Echo {
    type Input = EchoInput;
    type Output = Json<Value>;
    const NAME: &'static str = "echo";
    const DESCRIPTION: &'static str = "Echoes text.";

    async fn run(&self, input: EchoInput, _ctx: ToolCtx) -> Result<Json<Value>, ToolFailure> {
        Ok(Json(json!({ "echoed": input.text })))
    }
}

#[test]
fn the_spec_is_the_name_the_description_and_the_inputs_schema_without_its_doc_comment() {
    let spec = Greet::default().spec().clone();
    assert_eq!(spec.name, "greet");
    assert_eq!(spec.description, "Greets someone.");
    let p = &spec.parameters;
    assert_eq!(p["type"], "object");
    assert_eq!(p["required"], json!(["name"]));
    assert_eq!(p["properties"]["name"]["type"], "string");
    assert_eq!(p["properties"]["name"]["description"], "Who to greet.");
    assert_eq!(p["properties"]["times"]["description"], "How many times.");
    for key in ["description", "title", "$schema"] {
        assert!(p.get(key).is_none(), "the schema keeps `{key}`: {p}");
    }
}

#[test]
fn the_spec_is_made_once_per_type_and_each_type_has_its_own() {
    let (a, b) = (Greet::default(), Greet::default());
    assert!(std::ptr::eq(a.spec(), b.spec()), "one spec for every Greet");
    assert!(std::ptr::eq(a.spec(), a.spec()), "not made again per call");
    assert_eq!(Echo.spec().name, "echo");
    assert_eq!(Echo.spec().parameters["required"], json!(["text"]));
    assert_eq!(a.spec().name, "greet");
    // Seen as `dyn Tool`, too.
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Echo), Arc::new(Greet::default())];
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    assert_eq!(names, ["echo", "greet"]);
}

#[test]
fn specs_made_on_many_threads_at_once_are_one() {
    let specs: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| std::ptr::from_ref(Echo.spec()) as usize))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(specs.windows(2).all(|w| w[0] == w[1]), "{specs:?}");
}

#[tokio::test]
async fn a_call_reads_its_input_runs_and_turns_the_result_into_output() {
    let greet = Greet::default();
    let out = greet
        .call(json!({"name": "Ada", "times": 2}), ctx("greet"))
        .await
        .unwrap();
    assert_eq!(out.content, "Hello, Ada! Hello, Ada! (call call-1)");
    let out = Echo.call(json!({"text": "hi"}), ctx("echo")).await.unwrap();
    assert_eq!(out.content, r#"{"echoed":"hi"}"#);
    let failed = greet
        .call(json!({"name": ""}), ctx("greet"))
        .await
        .unwrap_err();
    assert_eq!(failed.message(), "the name is empty");
    assert_eq!(greet.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_bad_input_fails_naming_the_tool_and_run_is_not_called() {
    let greet = Greet::default();
    let failed = greet
        .call(json!({"nme": "Ada"}), ctx("greet"))
        .await
        .unwrap_err();
    assert_eq!(
        failed.message(),
        "the input of `greet` is invalid: missing field `name`; send the fields its schema lists"
    );
    let input = json!({"name": 7});
    let failed = greet.call_ref(&input, ctx("greet")).await.unwrap_err();
    assert_eq!(
        failed.message(),
        "the input of `greet` is invalid: invalid type: integer `7`, expected a string; send the fields its schema lists"
    );
    assert_eq!(greet.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn call_ref_reads_the_borrowed_input_in_place() {
    /// How a string reached the input: borrowed from the value, or handed over owned (which,
    /// from a borrowed value, means it was copied first).
    #[derive(Debug, PartialEq)]
    enum How {
        Borrowed,
        Owned,
    }
    impl<'de> Deserialize<'de> for How {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visitor;
            impl serde::de::Visitor<'_> for Visitor {
                type Value = How;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a string")
                }
                fn visit_borrowed_str<E>(self, _: &str) -> Result<How, E> {
                    Ok(How::Borrowed)
                }
                fn visit_str<E>(self, _: &str) -> Result<How, E> {
                    Ok(How::Borrowed)
                }
                fn visit_string<E>(self, _: String) -> Result<How, E> {
                    Ok(How::Owned)
                }
            }
            d.deserialize_string(Visitor)
        }
    }
    #[derive(Deserialize, JsonSchema)]
    struct ProbeInput {
        #[schemars(with = "String")]
        text: How,
    }
    struct Probe;
    impl StructTool for Probe {
        type Input = ProbeInput;
        type Output = String;
        const NAME: &'static str = "probe";
        const DESCRIPTION: &'static str = "Says how its input was read.";
        async fn run(&self, input: ProbeInput, _ctx: ToolCtx) -> Result<String, ToolFailure> {
            Ok(format!("{:?}", input.text))
        }
    }

    let input = json!({"text": "a long text"});
    let out = Probe.call_ref(&input, ctx("probe")).await.unwrap();
    assert_eq!(out.content, "Borrowed");
    assert_eq!(
        input,
        json!({"text": "a long text"}),
        "the input is left as it was"
    );
    let out = Probe.call(input, ctx("probe")).await.unwrap();
    assert_eq!(out.content, "Owned");
}

#[test]
fn approval_timeout_and_info_are_the_types_own() {
    /// A tool that overrides every default.
    struct Slow {
        info: Arc<ToolInfo>,
    }
    impl StructTool for Slow {
        type Input = EchoInput;
        type Output = String;
        const NAME: &'static str = "slow";
        const DESCRIPTION: &'static str = "Takes its time.";
        async fn run(&self, input: EchoInput, _ctx: ToolCtx) -> Result<String, ToolFailure> {
            Ok(input.text)
        }
        fn needs_approval(&self) -> bool {
            true
        }
        fn timeout(&self) -> Option<Duration> {
            Some(Duration::from_secs(7))
        }
        fn info(&self) -> Option<&Arc<ToolInfo>> {
            Some(&self.info)
        }
    }

    let slow: Arc<dyn Tool> = Arc::new(Slow {
        info: Arc::new(ToolInfo {
            source: Some("here".into()),
            ..Default::default()
        }),
    });
    assert!(slow.needs_approval());
    assert_eq!(slow.timeout(), Some(Duration::from_secs(7)));
    assert_eq!(slow.info().unwrap().source.as_deref(), Some("here"));

    let echo: Arc<dyn Tool> = Arc::new(Echo);
    assert!(!echo.needs_approval());
    assert_eq!(echo.timeout(), None);
    assert!(echo.info().is_none());

    // Per instance: the approval flag is a field.
    let asks = Greet {
        approval: true,
        ..Greet::default()
    };
    assert!(Tool::needs_approval(&asks));
    assert!(!Tool::needs_approval(&Greet::default()));
}
