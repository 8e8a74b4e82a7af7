//! `agentry run` and `agentry chat`.

use super::chat_input::ChatInput;
use super::{Failure, failed, open_agent, renderer, sessions, slash};
use crate::cli::{ApprovalArgs, ChatArgs, Cli, RunArgs};
use crate::drive::{Prompter, drive};
use crate::exit::Exit;
use crate::project::Project;
use agentry::{Content, Part};
use std::io::{IsTerminal, Read};

/// The prompt `args` gives: the files it attaches, then its words joined (or stdin for `-`).
pub(super) fn prompt(args: &RunArgs) -> Result<Content, Failure> {
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
    let mut content: Content = args
        .files
        .iter()
        .map(|path| attach(path))
        .collect::<Result<_, _>>()?;
    content.push(prompt);
    Ok(content)
}

/// A file as a part of the prompt, or a usage error naming it.
pub(super) fn attach(path: &std::path::Path) -> Result<Part, Failure> {
    Part::read(path).map_err(|e| {
        (
            Exit::Usage,
            format!("cannot attach {}: {e}", path.display()),
        )
    })
}

/// Adds to the project's runtime what `--allowed-tools` and `--yes` allow.
fn approvals(project: &mut Project, args: &ApprovalArgs) -> Result<(), Failure> {
    use agentry::hooks::{HookExt, on_sync};
    if !args.allowed_tools.is_empty() {
        project
            .allow_tools(&args.allowed_tools, "--allowed-tools")
            .map_err(|e| (Exit::Usage, e))?;
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
    let mut project = open_agent(cli, false, args.agent.as_deref(), &args.overrides).await?;
    approvals(&mut project, &args.approvals)?;
    let agent = project
        .agent(args.agent.as_deref())
        .map_err(|e| (Exit::Usage, e))?;
    // Every run is a session's (a new one unless named), so `--continue` can take it up.
    let session = match (&args.session, args.continue_session) {
        (Some(session), _) => session.clone(),
        (None, true) => sessions::latest(&project, agent.name()).await?,
        (None, false) => sessions::new_id(),
    };
    let options = project.run_options().session(session.clone());
    let handle = project.runtime.run(agent, prompt).with(options).start();
    let mut render = renderer(cli, color, &project);
    let prompter = Prompter::new(&project, args.no_prompt || cli.json);
    let exit = drive(&project, agent, handle, render.as_mut(), &prompter).await;
    project.end_session(&session, "other").await;
    Ok(exit)
}

/// `agentry chat`: each line typed is a run of one session.
pub(super) async fn chat(cli: &Cli, args: &ChatArgs, color: bool) -> Result<Exit, Failure> {
    let mut overrides = args.overrides.clone();
    let mut project = open_agent(cli, false, args.agent.as_deref(), &overrides).await?;
    approvals(&mut project, &args.approvals)?;
    let agent_name = project
        .agent(args.agent.as_deref())
        .map_err(|e| (Exit::Usage, e))?
        .name()
        .to_owned();
    let interactive = std::io::stdin().is_terminal() && !cli.json;
    let mut session = match (&args.session, args.continue_session, args.pick) {
        (Some(session), ..) => session.clone(),
        (None, true, _) => sessions::latest(&project, &agent_name).await?,
        (None, false, true) if interactive => sessions::pick(&project, &agent_name).await?,
        (None, false, true) => {
            return Err((
                Exit::Usage,
                "--resume lists sessions to choose from on a terminal; name one with --session"
                    .into(),
            ));
        }
        (None, false, false) => sessions::new_id(),
    };
    if interactive {
        eprintln!(
            "chatting with `{agent_name}` in session {session} (/help for commands; Ctrl-D ends it)"
        );
    }
    let mut input = ChatInput::new(interactive);
    let prompter = Prompter::new(&project, cli.json);
    let mut last = Exit::Ok;
    let mut compact_next = false;
    let mut attached: Vec<Part> = Vec::new();
    while let Some(line) = input.next_line().await? {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        // `//text` sends `/text`; any other `/word` is a command.
        let (line, command) = match line.strip_prefix('/') {
            Some(rest) if rest.starts_with('/') => (rest, None),
            Some(rest) => (line, Some(rest)),
            None => (line, None),
        };
        if let Some(command) = command {
            match slash::Command::parse(command) {
                Ok(slash::Command::Exit) => break,
                Ok(slash::Command::Attach(path)) => match attach(std::path::Path::new(&path)) {
                    Ok(part) => {
                        eprintln!("attached {} to your next message", part.describe());
                        attached.push(part);
                    }
                    Err((_, e)) => eprintln!("error: {e}"),
                },
                Ok(slash::Command::Help) => eprintln!("{}", slash::HELP),
                Ok(slash::Command::Clear) => {
                    let next = sessions::new_id();
                    project.clear_session(&session, &next).await;
                    session = next;
                    eprintln!("a new conversation: session {session}");
                }
                Ok(slash::Command::Compact) => {
                    if project.compacts(&agent_name) {
                        compact_next = true;
                        eprintln!("the conversation is compacted before your next message");
                    } else {
                        eprintln!(
                            "`{agent_name}` does not compact its history: give it [agents.{agent_name}.compaction] (strategy = \"summarize\", threshold = ...) in agentry.toml"
                        );
                    }
                }
                Ok(slash::Command::Cost) => {
                    eprintln!("{}", sessions::cost(&project, &session).await?);
                }
                Ok(slash::Command::Model(None)) => {
                    let spec = project.model_spec(&agent_name);
                    eprintln!("model: {spec} (`/model PROVIDER:MODEL` switches)");
                }
                Ok(slash::Command::Model(Some(spec))) => {
                    overrides.model = Some(spec.clone());
                    match open_agent(cli, false, Some(&agent_name), &overrides).await {
                        Ok(mut next) => {
                            approvals(&mut next, &args.approvals)?;
                            project = next;
                            eprintln!("model: {spec}, from the next turn on");
                        }
                        Err((_, e)) => eprintln!("error: {e}"),
                    }
                }
                Err(e) => eprintln!("{e}"),
            }
            continue;
        }
        let agent = project
            .agent(Some(&agent_name))
            .map_err(|e| (Exit::Usage, e))?;
        let mut options = project.run_options().session(session.clone());
        if std::mem::take(&mut compact_next) {
            options = options.compact_first();
        }
        let mut content: Content = std::mem::take(&mut attached).into();
        content.push(line);
        let handle = project.runtime.run(agent, content).with(options).start();
        let mut render = renderer(cli, color, &project);
        last = drive(&project, agent, handle, render.as_mut(), &prompter).await;
        if matches!(last, Exit::Cancelled | Exit::Leased) {
            break;
        }
    }
    input.save();
    // The conversation is over: its session ends (SessionEnd hooks), as when a Claude Code user
    // leaves.
    let reason = match last {
        Exit::Cancelled | Exit::Leased => "other",
        _ => "prompt_input_exit",
    };
    project.end_session(&session, reason).await;
    Ok(last)
}
