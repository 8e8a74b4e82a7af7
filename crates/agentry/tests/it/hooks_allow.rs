//! A BeforeTool hook's `allow` against everything else that decides whether a call runs: the
//! tool's own approval flag, another hook's request for approval or block, the tool policy. Each
//! pair of the precedence table on `BeforeTool` is run, in both hook orders.

use agentry::builtins::ToolPolicy;
use agentry::hooks::{BeforeTool, on_sync};
use agentry::prelude::*;
use agentry::{Message, ScriptedTurn};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// What became of the call.
#[derive(Debug, PartialEq, Clone, Copy)]
enum Outcome {
    Ran,
    Asked,
    Blocked,
}

/// What one hook does to the call.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Allow,
    Ask,
    Block,
}

impl Answer {
    fn apply(self, ev: &mut BeforeTool) {
        match self {
            Answer::Allow => ev.allow("the allow hook trusts it"),
            Answer::Ask => ev.require_approval("the ask hook wants a person"),
            Answer::Block => ev.block("the block hook forbids it"),
        }
    }
}

/// An agent calling `deploy` once (which needs approval when `approval`), and whose hooks answer
/// `answers` in that order (the first at the highest priority).
fn agent(approval: bool, answers: &[Answer], ran: Arc<AtomicU32>) -> Agent {
    let model = ScriptedModel::from_fn(|_, req| {
        if req.messages.iter().any(|m| matches!(m, Message::Tool(_))) {
            ScriptedTurn::text("done")
        } else {
            ScriptedTurn::new().with_tool_call_id("d1", "deploy", json!({"env": "prod"}))
        }
    });
    let deploy = tool("deploy", "Deploys.", move |_: Value, _c: ToolCtx| {
        let ran = ran.clone();
        async move {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, agentry::ToolFailure>("deployed")
        }
    });
    let deploy = if approval {
        deploy.needs_approval()
    } else {
        deploy
    };
    let mut b = Agent::builder("ops").model(model).tool(deploy);
    for (i, answer) in answers.iter().enumerate() {
        let answer = *answer;
        let hook = on_sync::before_tool(move |ev: &mut BeforeTool, _ctx| {
            answer.apply(ev);
            Ok(())
        })
        .named(format!("{answer:?}-hook"))
        .priority(100 - i as i32);
        b = b.with(hook);
    }
    b.build().unwrap()
}

async fn outcome(runtime: &Runtime, agent: &Agent, ran: &AtomicU32) -> Outcome {
    let out = runtime.run(agent, "ship it").await.unwrap();
    if out.stop.is_paused() {
        assert_eq!(ran.load(Ordering::SeqCst), 0, "a call waiting never ran");
        return Outcome::Asked;
    }
    let result = out
        .messages
        .iter()
        .find_map(|m| m.tool_result().cloned())
        .expect("the call has a result");
    if ran.load(Ordering::SeqCst) == 1 {
        assert_eq!(result.content, "deployed");
        Outcome::Ran
    } else {
        assert!(result.is_error, "{result:?}");
        assert_eq!(result.content, "the block hook forbids it");
        Outcome::Blocked
    }
}

#[tokio::test]
async fn allow_skips_only_the_tools_own_approval_and_ask_and_block_still_apply_in_any_order() {
    use Answer::*;
    use Outcome::*;
    let cases: &[(&[Answer], Outcome, Outcome)] = &[
        // hooks, the outcome for a tool without approval, for one that needs it
        (&[], Ran, Asked),
        (&[Allow], Ran, Ran),
        (&[Ask], Asked, Asked),
        (&[Allow, Ask], Asked, Asked),
        (&[Ask, Allow], Asked, Asked),
        (&[Block], Blocked, Blocked),
        (&[Allow, Block], Blocked, Blocked),
        (&[Block, Allow], Blocked, Blocked),
        // A request for approval does not hide a later block (deny > ask).
        (&[Ask, Block], Blocked, Blocked),
        (&[Block, Ask], Blocked, Blocked),
        (&[Allow, Ask, Block], Blocked, Blocked),
    ];
    let runtime = Runtime::new();
    for (answers, plain, needing) in cases {
        for (approval, expected) in [(false, plain), (true, needing)] {
            let ran = Arc::new(AtomicU32::new(0));
            let agent = agent(approval, answers, ran.clone());
            let got = outcome(&runtime, &agent, &ran).await;
            assert_eq!(
                got, *expected,
                "hooks {answers:?}, tool approval {approval}"
            );
        }
    }
}

#[tokio::test]
async fn an_allowed_call_records_who_allowed_it_and_why() {
    use futures::StreamExt;
    let ran = Arc::new(AtomicU32::new(0));
    let agent = agent(true, &[Answer::Allow], ran.clone());
    let mut run = Runtime::new().run(&agent, "ship it").start();
    let mut decisions = Vec::new();
    while let Some(ev) = run.events().next().await {
        if let RunEvent::HookDecision {
            hook,
            decision,
            detail,
            ..
        } = ev
        {
            decisions.push(format!("{hook}: {decision}: {detail}"));
        }
    }
    let out = run.result().await.unwrap();
    assert_eq!(out.text, "done");
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(decisions, ["Allow-hook: allowed: the allow hook trusts it"]);
}

#[tokio::test]
async fn the_tool_policys_allow_list_runs_a_tool_that_wants_approval_and_its_rules_still_ask_or_deny()
 {
    let runtime = Runtime::new();
    let policy = |b: agentry::builtins::ToolPolicyBuilder| b.build().unwrap();
    let cases = [
        (
            policy(ToolPolicy::allow_by_default().allow("deploy")),
            Outcome::Ran,
        ),
        (
            policy(ToolPolicy::deny_unless_allowed().allow("dep*")),
            Outcome::Ran,
        ),
        (
            policy(
                ToolPolicy::allow_by_default()
                    .allow("deploy")
                    .require_approval("deploy"),
            ),
            Outcome::Asked,
        ),
        (policy(ToolPolicy::allow_by_default()), Outcome::Asked),
    ];
    for (i, (policy, expected)) in cases.into_iter().enumerate() {
        let ran = Arc::new(AtomicU32::new(0));
        let agent = agent(true, &[], ran.clone());
        let runtime = runtime.clone().with(policy);
        assert_eq!(outcome(&runtime, &agent, &ran).await, expected, "case {i}");
    }
    // A hook's allow does not get past the policy's deny list.
    let ran = Arc::new(AtomicU32::new(0));
    let agent = agent(true, &[Answer::Allow], ran.clone());
    let denying = runtime.clone().with(
        ToolPolicy::allow_by_default()
            .deny("deploy")
            .build()
            .unwrap(),
    );
    let out = denying.run(&agent, "ship it").await.unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    let result = out
        .messages
        .iter()
        .find_map(|m| m.tool_result().cloned())
        .unwrap();
    assert!(
        result.content.text().contains("denies `deploy`"),
        "{}",
        result.content
    );
}
