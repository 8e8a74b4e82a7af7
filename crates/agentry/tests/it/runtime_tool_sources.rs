//! Tool sources: tools known only at run time, asked for before each step (never during one),
//! stored with a run's checkpoints when they are data, and built again on resume.

use agentry::RunOptions;
use agentry::hooks::BoxError;
use agentry::prelude::*;
use agentry::{StoredToolSource, Tool, ToolInfo, ToolSet, ToolSource};
use futures::future::BoxFuture;
use serde_json::json;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    text: String,
}

/// A source whose tools are `greet_<n>` for n in 1..=count; `grow` adds one.
#[derive(Clone)]
struct Counting {
    count: Arc<AtomicU32>,
    asked: Arc<AtomicU32>,
    set: Arc<Mutex<Option<(u32, ToolSet)>>>,
}

impl Counting {
    fn new(count: u32) -> Self {
        Counting {
            count: Arc::new(AtomicU32::new(count)),
            asked: Arc::default(),
            set: Arc::default(),
        }
    }
}

fn greet(n: u32) -> Arc<dyn Tool> {
    Arc::new(tool(
        format!("greet_{n}"),
        "Greets.",
        move |a: Text, _ctx| async move { Ok(format!("{n}: hello {}", a.text)) },
    ))
}

impl ToolSource for Counting {
    fn name(&self) -> &str {
        "counting"
    }
    fn tools(&self) -> BoxFuture<'_, Result<ToolSet, BoxError>> {
        Box::pin(async move {
            self.asked.fetch_add(1, Ordering::SeqCst);
            let count = self.count.load(Ordering::SeqCst);
            if count == 0 {
                return Err("the source is down".into());
            }
            let mut set = self.set.lock().unwrap();
            match &*set {
                Some((n, tools)) if *n == count => Ok(tools.clone()),
                _ => {
                    let tools: ToolSet = (1..=count).map(greet).collect();
                    *set = Some((count, tools.clone()));
                    Ok(tools)
                }
            }
        })
    }
}

impl StoredToolSource for Counting {
    const KIND: &'static str = "test/counting";
    fn spec(&self) -> serde_json::Value {
        json!({"count": self.count.load(Ordering::SeqCst)})
    }
    fn from_spec(spec: &serde_json::Value) -> Result<Self, BoxError> {
        Ok(Counting::new(
            spec["count"].as_u64().ok_or("no count")? as u32
        ))
    }
}

#[tokio::test]
async fn tools_of_a_source_are_called_and_a_change_is_seen_from_the_next_step() {
    let source = Counting::new(1);
    let grow = source.count.clone();
    let model = ScriptedModel::new()
        .tool_call("greet_1", json!({"text": "ada"}))
        .tool_call("greet_2", json!({"text": "bob"}))
        .text("done");
    let agent = Agent::builder("a")
        .model(model.clone())
        .after_tool(move |ev, _ctx| {
            let grow = grow.clone();
            async move {
                // The source changes during step 1: the model sees it from step 2.
                grow.store(2, Ordering::SeqCst);
                Ok(ev)
            }
        })
        .build()
        .unwrap();
    let out = Runtime::new()
        .run(&agent, "go")
        .with(RunOptions::new().with_tools(source.clone()))
        .await
        .unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    let requests = model.requests();
    let names =
        |i: usize| -> Vec<String> { requests[i].tools.iter().map(|t| t.name.clone()).collect() };
    assert_eq!(names(0), ["greet_1"]);
    assert_eq!(names(1), ["greet_1", "greet_2"]);
    let results: Vec<String> = out
        .messages
        .iter()
        .filter_map(|m| m.tool_result_text().map(|t| t.into_owned()))
        .collect();
    assert_eq!(results, ["1: hello ada", "2: hello bob"]);
    assert_eq!(
        source.asked.load(Ordering::SeqCst),
        3,
        "once before each step"
    );
}

#[tokio::test]
async fn a_source_that_fails_fails_the_run_naming_it() {
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("never"))
        .build()
        .unwrap();
    let e = Runtime::new()
        .run(&agent, "go")
        .with(RunOptions::new().with_tools(Counting::new(0)))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("tool source `counting`"), "{e}");
    assert!(e.contains("the source is down"), "{e}");
}

#[tokio::test]
async fn an_agents_own_tool_wins_over_a_sources_tool_of_the_same_name() {
    let own = tool(
        "greet_1",
        "Mine.",
        |_: Text, _ctx| async move { Ok("mine") },
    );
    let agent = Agent::builder("a")
        .model(
            ScriptedModel::new()
                .tool_call("greet_1", json!({"text": "x"}))
                .text("done"),
        )
        .tool(own)
        .build()
        .unwrap();
    let out = Runtime::new()
        .run(&agent, "go")
        .with(RunOptions::new().with_tools(Counting::new(1)))
        .await
        .unwrap();
    let results: Vec<String> = out
        .messages
        .iter()
        .filter_map(|m| m.tool_result_text().map(|t| t.into_owned()))
        .collect();
    assert_eq!(results, ["mine"]);
}

#[tokio::test]
async fn a_stored_source_is_built_again_when_the_run_resumes() {
    let store = MemoryStore::new();
    let agent = |model: ScriptedModel| {
        let wipe = tool("wipe", "Wipes.", |_: Text, _ctx| async move { Ok("wiped") });
        Agent::builder("a")
            .model(model)
            .tool(wipe.needs_approval())
            .build()
            .unwrap()
    };
    let first = agent(
        ScriptedModel::new()
            .tool_call("wipe", json!({"text": "x"}))
            .text("never"),
    );
    let out = Runtime::new()
        .store(store.clone())
        .run(&first, "go")
        .with(
            RunOptions::new()
                .run_id("r-1")
                .with_stored_tools(Counting::new(2)),
        )
        .await
        .unwrap();
    let StopReason::AwaitingApproval { pending } = out.stop else {
        panic!("paused")
    };
    let call = pending[0].call_id.clone();
    let second = agent(
        ScriptedModel::new()
            .tool_call("greet_2", json!({"text": "again"}))
            .text("done"),
    );
    let e = Runtime::new()
        .store(store.clone())
        .decide(&second, "r-1", [Decision::approve(call.clone())])
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("test/counting"), "{e}");
    let out = Runtime::new()
        .store(store)
        .restores_tools::<Counting>()
        .decide(&second, "r-1", [Decision::approve(call)])
        .await
        .unwrap();
    let results: Vec<String> = out
        .messages
        .iter()
        .filter_map(|m| m.tool_result_text().map(|t| t.into_owned()))
        .collect();
    assert_eq!(results, ["wiped", "2: hello again"]);
}

/// A tool that says where it comes from and that it is destructive.
struct Declared {
    spec: agentry::ToolSpec,
    info: Arc<ToolInfo>,
}

impl Tool for Declared {
    fn spec(&self) -> &agentry::ToolSpec {
        &self.spec
    }
    fn call<'a>(
        &'a self,
        _input: serde_json::Value,
        _ctx: ToolCtx,
    ) -> BoxFuture<'a, Result<agentry::ToolOutput, agentry::ToolFailure>> {
        Box::pin(async { Ok(agentry::ToolOutput::text("dropped")) })
    }
    fn info(&self) -> Option<&Arc<ToolInfo>> {
        Some(&self.info)
    }
}

#[tokio::test]
async fn hooks_see_a_tools_info_and_the_policy_asks_before_destructive_tools() {
    let declared = Declared {
        spec: agentry::ToolSpec {
            name: "drop_table".into(),
            description: "Drops a table.".into(),
            parameters: json!({"type": "object"}),
        },
        info: Arc::new(ToolInfo {
            source: Some("db".into()),
            annotations: Some(agentry::ToolAnnotations {
                destructive_hint: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        }),
    };
    let sources: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let log = sources.clone();
    let agent = Agent::builder("a")
        .model(
            ScriptedModel::new()
                .tool_call("drop_table", json!({}))
                .text("x"),
        )
        .tool(declared)
        // Before the policy (priority 200), whose request for approval ends the chain.
        .with(
            on::before_tool(move |ev, _ctx| {
                let log = log.clone();
                async move {
                    log.lock().unwrap().push(ev.source().map(str::to_string));
                    Ok(ev)
                }
            })
            .priority(300),
        )
        .with(agentry::builtins::ToolPolicy::for_mcp().build().unwrap())
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "go").await.unwrap();
    let StopReason::AwaitingApproval { pending } = &out.stop else {
        panic!("the destructive call waits: {:?}", out.stop)
    };
    assert!(
        pending[0].reason.contains("destructive"),
        "{}",
        pending[0].reason
    );
    assert_eq!(*sources.lock().unwrap(), [Some("db".to_string())]);
}

#[tokio::test]
async fn a_sub_agent_gets_its_parent_run_s_tool_sources() {
    let helper = Agent::builder("helper")
        .description("Greets people.")
        .model(
            ScriptedModel::new()
                .tool_call("greet_1", json!({"text": "ada"}))
                .text("greeted ada"),
        )
        .build()
        .unwrap();
    let parent = Agent::builder("parent")
        .model(
            ScriptedModel::new()
                .tool_call("helper", json!({"input": "greet ada"}))
                .text("done"),
        )
        .sub_agent(&helper)
        .build()
        .unwrap();
    let mut handle = Runtime::new()
        .run(&parent, "go")
        .with(RunOptions::new().with_tools(Counting::new(1)))
        .start();
    let mut events = Vec::new();
    while let Some(e) = futures::StreamExt::next(&mut handle.events()).await {
        events.push(e);
    }
    let out = handle.result().await.unwrap();
    assert_eq!(out.text, "done");
    // The sub-agent called the source's tool, in its own run, and got its real result.
    let greeted = events.iter().find_map(|e| match e {
        RunEvent::ToolFinished {
            result, agent_path, ..
        } if result.name == "greet_1" => {
            Some((result.content.text().into_owned(), agent_path.to_string()))
        }
        _ => None,
    });
    assert_eq!(
        greeted,
        Some(("1: hello ada".to_owned(), "parent/helper".to_owned()))
    );
}
