//! `agentry run` and `agentry chat`.

use super::{Failure, failed, open, renderer};
use crate::cli::{ApprovalArgs, ChatArgs, Cli, RunArgs};
use crate::drive::{Prompter, drive};
use crate::exit::Exit;
use crate::project::Project;
use std::io::{BufRead, IsTerminal, Read, Write};

/// The prompt `args` gives: its words joined, or stdin for `-`.
pub(super) fn prompt(args: &RunArgs) -> Result<String, Failure> {
    let prompt = if args.prompt == ["-"] {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| failed(format!("cannot read the prompt from stdin: {e}")))?;
        text
    } else {
        args.prompt.join(" ")
    };
    if prompt.trim().is_empty() {
        return Err((Exit::Usage, "the prompt is empty".into()));
    }
    Ok(prompt)
}

/// Adds to the project's runtime what `--allowed-tools` and `--yes` allow.
fn approvals(project: &mut Project, args: &ApprovalArgs) -> Result<(), Failure> {
    use agentry::builtins::ToolPolicy;
    use agentry::hooks::{HookExt, on_sync};
    if !args.allowed_tools.is_empty() {
        let mut policy = ToolPolicy::allow_by_default();
        for tool in &args.allowed_tools {
            policy = policy.allow(tool.trim());
        }
        let policy = policy
            .build()
            .map_err(|e| (Exit::Usage, format!("--allowed-tools: {e}")))?;
        project.runtime = project
            .runtime
            .clone()
            .with(policy.named("--allowed-tools"));
        project.runtime_hooks.push((
            "--allowed-tools".into(),
            format!("{} run without asking", args.allowed_tools.join(", ")),
        ));
    }
    if args.yes {
        let yes = on_sync::approval_requested(|ev, _ctx| {
            ev.approve();
            Ok(())
        })
        .named("--yes");
        project.runtime = project.runtime.clone().with(yes);
        project
            .runtime_hooks
            .push(("--yes".into(), "every call that asks is approved".into()));
    }
    Ok(())
}

/// `agentry run PROMPT`.
pub(super) async fn run(cli: &Cli, args: &RunArgs, color: bool) -> Result<Exit, Failure> {
    let prompt = prompt(args)?;
    let mut project = open(cli, false).await?;
    approvals(&mut project, &args.approvals)?;
    let agent = project
        .agent(args.agent.as_deref())
        .map_err(|e| (Exit::Usage, e))?;
    let mut options = project.run_options();
    if let Some(session) = &args.session {
        options = options.session(session.clone());
    }
    let handle = project.runtime.run(agent, prompt).with(options).start();
    let mut render = renderer(cli, color);
    let prompter = Prompter::detect(args.no_prompt || cli.json);
    Ok(drive(&project, agent, handle, render.as_mut(), &prompter).await)
}

/// `agentry chat`: each line typed is a run of one session.
pub(super) async fn chat(cli: &Cli, args: &ChatArgs, color: bool) -> Result<Exit, Failure> {
    let mut project = open(cli, false).await?;
    approvals(&mut project, &args.approvals)?;
    let agent = project
        .agent(args.agent.as_deref())
        .map_err(|e| (Exit::Usage, e))?;
    let session = args
        .session
        .clone()
        .unwrap_or_else(|| format!("chat-{}", uuid_like()));
    let interactive = std::io::stdin().is_terminal();
    if interactive && !cli.json {
        eprintln!(
            "chatting with `{}` in session {session} (an empty line or Ctrl-D ends it)",
            agent.name()
        );
    }
    let prompter = Prompter::detect(cli.json);
    let mut last = Exit::Ok;
    let stdin = std::io::stdin();
    loop {
        if interactive && !cli.json {
            eprint!("> ");
            let _ = std::io::stderr().flush();
        }
        let mut line = String::new();
        let read = stdin.lock().read_line(&mut line);
        match read {
            Ok(0) => break,
            Ok(_) if line.trim().is_empty() && interactive => break,
            Ok(_) if line.trim().is_empty() => continue,
            Ok(_) => {}
            Err(e) => return Err(failed(format!("cannot read stdin: {e}"))),
        }
        let options = project.run_options().session(session.clone());
        let handle = project
            .runtime
            .run(agent, line.trim())
            .with(options)
            .start();
        let mut render = renderer(cli, color);
        last = drive(&project, agent, handle, render.as_mut(), &prompter).await;
        if matches!(last, Exit::Cancelled | Exit::Leased) {
            break;
        }
    }
    // The conversation is over: its session ends (SessionEnd hooks), as when a Claude Code user
    // leaves.
    let reason = match last {
        Exit::Cancelled | Exit::Leased => "other",
        _ => "prompt_input_exit",
    };
    for sessions in &project.sessions {
        if let Err(e) = sessions.end(&session, reason).await {
            eprintln!("warning: SessionEnd hooks of session {session}: {e}");
        }
    }
    Ok(last)
}

/// A short random id.
fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{:x}{:x}", nanos & 0xffff_ffff, std::process::id())
}
