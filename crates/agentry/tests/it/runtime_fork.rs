//! Forks: a new run from the end of a stored run's step, with that step's history and state, or
//! another input or state.

use agentry::prelude::*;
use agentry::{Fork, ForkError, MemoryStore, Message, RunOptions, RunStore, ScriptedTurn};
use serde_json::json;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Basket {
    items: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
struct Item {
    item: String,
}

const ITEMS: [&str; 3] = ["milk", "eggs", "flour"];

/// Adds milk, eggs and flour to its basket, one per step, then answers with the last thing the
/// user said and how many results it saw (at once when told to `stop`): its turns follow from
/// the history alone.
fn shopper() -> Agent<Basket> {
    let model = ScriptedModel::from_fn(|_, req| {
        let results = req
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool(_)))
            .count();
        let said = req
            .messages
            .iter()
            .rev()
            .find(|m| matches!(m, Message::User { .. }))
            .map(|m| m.text().into_owned())
            .unwrap_or_default();
        match ITEMS.get(results) {
            Some(item) if !said.starts_with("stop") => {
                ScriptedTurn::new().with_tool_call("add", json!({ "item": item }))
            }
            _ => ScriptedTurn::new().with_text(format!("{said} ({results} added)")),
        }
    });
    let add = tool("add", "Adds an item.", |a: Item, ctx: ToolCtx| async move {
        ctx.update_state(|s: &mut Basket| s.items.push(a.item.clone()))?;
        Ok("added")
    });
    Agent::builder("shopper")
        .model(model)
        .tool(add)
        .state(Basket {
            items: vec!["salt".into()],
        })
        .build()
        .unwrap()
}

fn items(state: &serde_json::Value) -> Vec<String> {
    serde_json::from_value(state["items"].clone()).unwrap()
}

#[tokio::test]
async fn a_fork_starts_from_each_step_with_that_steps_history_and_state() {
    let store = MemoryStore::new();
    let runtime = Runtime::new().store(store.clone());
    let agent = shopper();
    let first = runtime.run(&agent, "shop").await.unwrap();
    assert_eq!(first.steps, 4);
    assert_eq!(first.state.items, ["salt", "milk", "eggs", "flour"]);
    let stored = store.load(&first.run_id).await.unwrap().unwrap();
    let events = store.events(&first.run_id).await.unwrap();

    for step in 0..=3u32 {
        let forked = Fork::at(step)
            .snapshot(&stored.snapshot, &events, "f")
            .unwrap();
        // The input, then a call and its result per step.
        let n = 1 + 2 * step as usize;
        assert_eq!(forked.messages.len(), n, "step {step}");
        for i in 0..n {
            assert_eq!(forked.messages.get(i), stored.snapshot.messages.get(i));
        }
        let mut expected = vec!["salt".to_owned()];
        expected.extend(ITEMS[..step as usize].iter().map(|s| s.to_string()));
        assert_eq!(items(&forked.state), expected, "state at step {step}");
        assert_eq!(forked.step, step);
        assert_eq!(forked.metadata["forked_from"], first.run_id.as_str());
        assert_eq!(forked.metadata["forked_at_step"], step);
    }

    // Run from step 1: the rest is done again, from the state as it was then.
    let fork = runtime
        .fork(&agent, &first.run_id, Fork::at(1))
        .await
        .unwrap();
    assert_ne!(fork.run_id, first.run_id);
    assert_eq!(fork.state.items, first.state.items);
    assert_eq!(fork.text, "shop (3 added)");
    assert_eq!(fork.steps, 4);
    assert_eq!(fork.messages.len(), first.messages.len());
    // The run forked from is untouched.
    let after = store.load(&first.run_id).await.unwrap().unwrap();
    assert_eq!(
        after.snapshot.messages.len(),
        stored.snapshot.messages.len()
    );
    assert_eq!(after.revision, stored.revision);
}

#[tokio::test]
async fn a_fork_goes_on_with_another_input_or_state() {
    let store = MemoryStore::new();
    let runtime = Runtime::new().store(store.clone());
    let agent = shopper();
    let first = runtime.run(&agent, "shop").await.unwrap();

    // Another state at step 2: what follows builds on it.
    let other = runtime
        .fork(
            &agent,
            &first.run_id,
            Fork::at(2).state(json!({"items": ["bread"]})),
        )
        .await
        .unwrap();
    assert_eq!(other.state.items, ["bread", "flour"]);

    // Another input at the start replaces the run's.
    let asked = runtime
        .fork(
            &agent,
            &first.run_id,
            Fork::at(0).input("stop, just say hi"),
        )
        .await
        .unwrap();
    assert_eq!(asked.text, "stop, just say hi (0 added)");
    assert_eq!(asked.messages.len(), 2);
    assert_eq!(asked.state.items, ["salt"]);

    // After a step, the input is the user's next message.
    let told = runtime
        .fork(&agent, &first.run_id, Fork::at(4).input("stop, thanks"))
        .await
        .unwrap();
    assert_eq!(told.text, "stop, thanks (3 added)");
    assert_eq!(told.messages.len(), first.messages.len() + 2);
    assert_eq!(told.steps, 5);
}

#[tokio::test]
async fn a_fork_that_cannot_be_says_why_and_starts_nothing() {
    let store = MemoryStore::new();
    let runtime = Runtime::new().store(store.clone());
    let agent = shopper();
    let first = runtime.run(&agent, "shop").await.unwrap();

    let err = runtime
        .fork(&agent, &first.run_id, Fork::at(9))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Fork(ForkError::NoSuchStep {
                step: 9,
                finished: 4,
                ..
            })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("finished 4 step(s)"), "{err}");

    let err = runtime
        .fork(&agent, &first.run_id, Fork::at(4))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Fork(ForkError::NothingToDo { step: 4, .. })),
        "{err}"
    );
    assert!(err.to_string().contains("give the fork an input"), "{err}");

    let err = runtime.fork(&agent, "nope", Fork::at(1)).await.unwrap_err();
    assert!(
        matches!(&err, Error::Fork(ForkError::NoSuchRun { run_id, .. }) if run_id == "nope"),
        "{err}"
    );
    assert!(err.to_string().contains("cannot be forked"), "{err}");
    assert!(err.to_string().contains("no run with this id"), "{err}");
    let err = Runtime::new()
        .fork(&agent, &first.run_id, Fork::at(1))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("has no store"), "{err}");
    assert_eq!(
        store.list(&agentry::RunQuery::all()).await.unwrap().len(),
        1
    );
}

#[tokio::test]
async fn a_fork_of_a_fork_and_of_a_sessions_run_keep_what_came_before() {
    let store = MemoryStore::new();
    let runtime = Runtime::new().store(store.clone());
    let agent = shopper();
    let first = runtime.run(&agent, "shop").await.unwrap();

    // A fork from step 2 recorded only the steps it ran (3 and 4); it forks again from them,
    // with the state it started from as its own first record.
    let fork = runtime
        .fork(
            &agent,
            &first.run_id,
            Fork::at(2).state(json!({"items": []})),
        )
        .await
        .unwrap();
    assert_eq!(fork.state.items, ["flour"]);
    let stored = store.load(&fork.run_id).await.unwrap().unwrap();
    let events = store.events(&fork.run_id).await.unwrap();
    let again = Fork::at(3)
        .snapshot(&stored.snapshot, &events, "g")
        .unwrap();
    assert_eq!(again.messages.len(), 7);
    assert_eq!(items(&again.state), ["flour"]);
    let before = Fork::at(2)
        .snapshot(&stored.snapshot, &events, "g")
        .unwrap();
    assert_eq!(before.messages.len(), 5);
    assert!(items(&before.state).is_empty());
    let err = Fork::at(1)
        .snapshot(&stored.snapshot, &events, "g")
        .unwrap_err();
    assert!(err.to_string().contains("began at step 3"), "{err}");

    // A session's second run starts with the first one's history: its fork keeps it.
    let options = || RunOptions::new().session("s-1");
    let one = runtime
        .run(&agent, "stop, hello")
        .with(options())
        .await
        .unwrap();
    let two = runtime
        .run(&agent, "stop, again")
        .with(options())
        .await
        .unwrap();
    assert_eq!(two.messages.len(), one.messages.len() + 2);
    let forked = runtime
        .fork(&agent, &two.run_id, Fork::at(0).input("stop, instead"))
        .await
        .unwrap();
    assert_eq!(forked.messages.len(), two.messages.len());
    assert_eq!(forked.messages.get(0), one.messages.get(0));
    assert_eq!(forked.text, "stop, instead (0 added)");
    assert_eq!(forked.session_id, None);
}

#[tokio::test]
async fn a_compacted_run_cannot_be_forked_and_says_so() {
    let agent = Agent::builder("chat")
        .model(ScriptedModel::from_fn(|_, _| ScriptedTurn::text("ok")))
        .compaction(agentry::agent::Compaction::window(1_000_000).keep_recent(1))
        .build()
        .unwrap();
    let store = MemoryStore::new();
    let runtime = Runtime::new().store(store.clone());
    let session = RunOptions::new().session("s");
    runtime
        .run(&agent, "one")
        .with(session.clone())
        .await
        .unwrap();
    let compacted = runtime
        .run(&agent, "two")
        .with(session.compact_first())
        .await
        .unwrap();

    let err = runtime
        .fork(&agent, &compacted.run_id, Fork::at(0).input("again"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Fork(ForkError::Compacted { run_id }) if *run_id == compacted.run_id),
        "{err}"
    );
    assert!(err.to_string().contains("fork a run that was not"), "{err}");
}

#[tokio::test]
async fn a_run_with_sub_agents_forks_from_its_own_steps_and_the_fork_calls_them_again() {
    let child = Agent::builder("counter")
        .description("Counts.")
        .model(ScriptedModel::from_fn(|_, req| {
            if req.messages.iter().any(|m| matches!(m, Message::Tool(_))) {
                ScriptedTurn::text("counted")
            } else {
                ScriptedTurn::new().with_tool_call("tick", json!({"item": "x"}))
            }
        }))
        .tool(tool("tick", "Ticks.", |_: Item, _c: ToolCtx| async move {
            Ok("ticked")
        }))
        .build()
        .unwrap();
    // Asks the counter twice, then answers with how many results it saw.
    let model = ScriptedModel::from_fn(|_, req| {
        let results = req
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool(_)))
            .count();
        if results < 2 {
            ScriptedTurn::new().with_tool_call("counter", json!({"input": "count"}))
        } else {
            ScriptedTurn::text(format!("{results} counts"))
        }
    });
    let agent = Agent::builder("boss")
        .model(model)
        .sub_agent(&child)
        .build()
        .unwrap();
    let store = MemoryStore::new();
    let runtime = Runtime::new().store(store.clone());
    let first = runtime.run(&agent, "go").await.unwrap();
    assert_eq!(first.steps, 3);
    let events = store.events(&first.run_id).await.unwrap();
    let sub_steps = events
        .iter()
        .filter(|e| e.event.kind == "step_started" && e.event.data["agent_path"] == "boss/counter")
        .count();
    assert_eq!(
        sub_steps, 4,
        "the counter's steps are in the boss's history"
    );

    let stored = store.load(&first.run_id).await.unwrap().unwrap();
    for step in 0..=2u32 {
        let forked = Fork::at(step)
            .snapshot(&stored.snapshot, &events, "f")
            .unwrap();
        // The boss's own history only: the input, then a call and its result per step.
        assert_eq!(forked.messages.len(), 1 + 2 * step as usize, "step {step}");
    }
    let fork = runtime
        .fork(&agent, &first.run_id, Fork::at(1))
        .await
        .unwrap();
    assert_eq!(fork.output.as_deref(), Some("2 counts"));
    assert_eq!(fork.steps, 3, "it went on from step 1");
}
