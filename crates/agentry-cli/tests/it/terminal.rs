//! The command on a pseudo-terminal, read as a person sees it: the bytes it writes are played on
//! a terminal emulator, and the assertions are on the screen that is left, so a line that output
//! erased or overwrote is caught.

use crate::common::Project;
use serde_json::{Value, json};
use std::io::Read;
use std::process::Command;
use std::time::{Duration, Instant};

const COLS: u16 = 100;
const ROWS: u16 = 40;

/// `agentry args` in `p` on a pseudo-terminal of COLS×ROWS (stdin, stdout and stderr all on
/// it), with colour or without, echoing what is typed as a person's terminal does.
fn spawn(p: &Project, args: &[&str], color: bool) -> expectrl::Session {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("agentry"));
    cmd.current_dir(p.path())
        .args(args)
        .env("AGENTRY_HOME", p.home())
        .env_remove("AGENTRY_MODEL");
    if color {
        cmd.env_remove("NO_COLOR").env("TERM", "xterm-256color");
    } else {
        cmd.env("NO_COLOR", "1");
    }
    let mut session = expectrl::Session::spawn(cmd).expect("a pseudo-terminal");
    let process = session.get_process_mut();
    process
        .set_window_size(COLS, ROWS)
        .expect("the terminal's size");
    process.set_echo(true, None).expect("echo on");
    session.set_expect_timeout(Some(Duration::from_secs(30)));
    session
}

/// Runs `agentry args` in `p` on a pseudo-terminal until it exits, and returns the screen it
/// leaves, one string per row with trailing blanks (and blank rows at the end) cut.
pub(crate) fn screen(p: &Project, args: &[&str], color: bool) -> Vec<String> {
    screen_after(p, args, &[], color)
}

/// [`screen`], answering each prompt `expect` with `send` on the way.
fn screen_after(p: &Project, args: &[&str], answers: &[(&str, &str)], color: bool) -> Vec<String> {
    let mut session = spawn(p, args, color);
    let mut bytes = Vec::new();
    for (expect, send) in answers {
        let found = session.expect(*expect).expect("the prompt");
        bytes.extend_from_slice(found.before());
        for m in found.matches() {
            bytes.extend_from_slice(m);
        }
        session.send(*send).unwrap();
    }
    let mut chunk = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "the command did not finish");
        match session.read(&mut chunk) {
            // The end of the output: the process closed the terminal (EOF, or EIO on Linux).
            Ok(0) | Err(_) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
    }
    let size = |n: u16| std::num::NonZeroU16::new(n).expect("a size");
    let mut parser = vt100::Parser::new(size(ROWS), size(COLS), 0);
    parser.process(&bytes);
    let mut rows: Vec<String> = parser
        .screen()
        .rows(0, COLS)
        .map(|row| row.trim_end().to_owned())
        .collect();
    while rows.last().is_some_and(String::is_empty) {
        rows.pop();
    }
    rows
}

/// The rows of `screen` joined, for messages.
fn shown(screen: &[String]) -> String {
    screen.join("\n")
}

fn project(turns: Value) -> Project {
    Project::new(
        r#"
[agents.helper]
model = "scripted:turns.json"
tools = ["Bash"]

[tools.Bash]
approval = false
"#,
        turns,
    )
}

#[test]
fn the_streamed_answer_stays_on_screen_after_the_run_with_and_without_colour() {
    let answer = "The build is green and all 42 tests pass.";
    for color in [false, true] {
        let p = project(json!([
            {"tool_calls": [{"name": "Bash", "input": {"command": "echo checked"}}]},
            {"text": answer}
        ]));
        let screen = screen(&p, &["run", "check the build"], color);
        let text = shown(&screen);
        assert!(
            screen.iter().any(|row| row.contains(answer)),
            "colour {color}: the answer is on screen:\n{text}"
        );
        assert!(
            screen.iter().any(|row| row.contains("final answer")),
            "colour {color}: the summary:\n{text}"
        );
        assert!(
            !text.contains("thinking…"),
            "colour {color}: no stale spinner line:\n{text}"
        );
        // The answer comes before the summary, each on its own line.
        let at = |needle: &str| screen.iter().position(|r| r.contains(needle)).unwrap();
        assert!(at(answer) < at("final answer"), "{text}");
    }
}

#[test]
fn a_multi_line_answer_keeps_every_line() {
    let p = project(json!([{"text": "First line.\nSecond line.\nThird line."}]));
    let screen = screen(&p, &["run", "three lines"], false);
    for line in ["First line.", "Second line.", "Third line."] {
        assert!(
            screen.iter().any(|row| row.contains(line)),
            "{line} is on screen:\n{}",
            shown(&screen)
        );
    }
}

#[test]
fn markdown_is_styled_on_a_colour_terminal_and_left_plain_otherwise() {
    let answer = "Steps:\n- build **everything**\n- run `cargo test`\n```sh\ncargo test\n```";
    let p = project(json!([{ "text": answer }]));
    let styled = screen(&p, &["run", "how?"], true);
    let text = shown(&styled);
    assert!(styled.iter().any(|r| r == "• build everything"), "{text}");
    assert!(styled.iter().any(|r| r == "• run cargo test"), "{text}");
    assert!(styled.iter().any(|r| r == "cargo test"), "{text}");
    assert!(!text.contains("**") && !text.contains("- build"), "{text}");
    // Without colour (or off a terminal) the answer is the model's text as it is.
    let p = project(json!([{ "text": answer }]));
    let plain = screen(&p, &["run", "how?"], false);
    assert!(
        plain.iter().any(|r| r == "- build **everything**"),
        "{}",
        shown(&plain)
    );
}

#[test]
fn chat_edits_lines_with_arrow_keys_and_recalls_history() {
    let p = Project::new(
        r#"
[agents.helper]
model = "scripted:turns.json"

[[hooks.events.UserPromptSubmit]]
hooks = [{ type = "command", command = "jq -r .prompt >> prompts.log" }]
"#,
        json!([{"text": "First answer."}, {"text": "Second answer."}]),
    );
    let mut session = spawn(&p, &["chat"], false);
    session.expect("> ").expect("the chat's prompt");
    // "helo", the cursor one left, "l": the line sent is "hello", not escape codes.
    session.send("helo\x1b[Dl\r").unwrap();
    session.expect("First answer.").expect("the first answer");
    session.expect("> ").expect("the prompt again");
    // Up recalls the last line; "!" is added to it.
    session.send("\x1b[A!\r").unwrap();
    session.expect("Second answer.").expect("the second answer");
    session.expect("> ").expect("the prompt again");
    session.send("\x04").unwrap();
    wait_exit(&mut session);
    let prompts = std::fs::read_to_string(p.file("prompts.log")).unwrap();
    assert_eq!(prompts.lines().collect::<Vec<_>>(), ["hello", "hello!"]);
    let history = std::fs::read_to_string(p.home().join("chat_history")).unwrap();
    assert!(history.contains("hello!"), "history is kept: {history}");
}

/// `agentry run PROMPT` on a pseudo-terminal, stopped at its first approval prompt, with what
/// the terminal showed before it.
fn at_a_prompt(p: &Project, prompt: &str) -> (expectrl::Session, String) {
    let mut session = spawn(p, &["run", prompt], false);
    let found = session.expect("[a]pprove").expect("the approval prompt");
    let before = String::from_utf8_lossy(found.before()).into_owned();
    session.expect("? ").expect("the prompt's end");
    (session, before)
}

/// Waits for `session`'s process to exit.
fn wait_exit(session: &mut expectrl::Session) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while session.is_alive().unwrap_or(false) {
        assert!(Instant::now() < deadline, "the command exits");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn writer() -> &'static str {
    "[agents.helper]\nmodel = \"scripted:turns.json\"\ntools = [\"Write\", \"Edit\"]\n"
}

#[test]
fn the_prompt_shows_the_diff_and_session_approval_covers_the_next_calls() {
    let p = Project::new(
        writer(),
        json!([
            {"tool_calls": [{"name": "Edit", "input": {"file_path": "notes.txt", "old_string": "old line", "new_string": "new line"}}]},
            {"tool_calls": [{"name": "Edit", "input": {"file_path": "notes.txt", "old_string": "kept", "new_string": "changed too"}}]},
            {"text": "Both edits made."}
        ]),
    );
    std::fs::write(p.file("notes.txt"), "first\nold line\nkept\n").unwrap();
    let (mut session, before) = at_a_prompt(&p, "edit the notes");
    assert!(before.contains("-old line"), "the diff: {before}");
    assert!(before.contains("+new line"), "the diff: {before}");
    assert!(before.contains(" first"), "the diff's context: {before}");
    session.send("s\r").unwrap();
    session
        .expect("approved (allowed for this session)")
        .expect("the second Edit is approved without asking");
    session.expect("Both edits made.").expect("the answer");
    wait_exit(&mut session);
    let notes = std::fs::read_to_string(p.file("notes.txt")).unwrap();
    assert_eq!(notes, "first\nnew line\nchanged too\n");
    assert!(
        !p.file(".agentry/local.toml").exists(),
        "a session's approval is not kept"
    );
}

#[test]
fn always_keeps_the_tool_allowed_in_the_project() {
    let p = Project::new(
        writer(),
        json!([
            {"tool_calls": [{"name": "Write", "input": {"file_path": "a.txt", "content": "a\n"}}]},
            {"text": "Written."}
        ]),
    );
    let (mut session, before) = at_a_prompt(&p, "write a");
    assert!(
        before.contains("new file a.txt, 1 lines") && before.contains("+a"),
        "{before}"
    );
    session.send("A\r").unwrap();
    session.expect("Written.").expect("the answer");
    wait_exit(&mut session);
    let local = std::fs::read_to_string(p.file(".agentry/local.toml")).unwrap();
    assert!(local.contains("allowed_tools = [\"Write\"]"), "{local}");
    // The next command (no terminal to ask on) runs Write without waiting for approval.
    std::fs::remove_file(p.file("a.txt")).unwrap();
    let (lines, code) = p.json(&["run", "write a again"]);
    assert_eq!(code, 0, "{lines:?}");
    assert!(p.file("a.txt").exists());
    let (check, _) = p.json(&["config", "check"]);
    assert!(
        check[0]["layers"].to_string().contains("local.toml"),
        "{check:?}"
    );
}

/// A screen with what differs between runs made the same: run ids, times, where the project is.
fn steady(screen: &[String], project: &std::path::Path) -> String {
    let dir = std::fs::canonicalize(project)
        .unwrap()
        .display()
        .to_string();
    let id =
        regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let secs = regex::Regex::new(r"\d+\.\d s").unwrap();
    let short = regex::Regex::new(r"· run [0-9a-f]{8}$").unwrap();
    screen
        .iter()
        .map(|row| {
            let row = row.replace(&dir, "/home/you/notes");
            let row = id.replace_all(&row, "4f1c2a9e-8d3b-4c6e-9a57-2b8e1d0f6c13");
            let row = short.replace_all(&row, "· run 4f1c2a9e");
            secs.replace_all(&row, "0.1 s").into_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The block of `page` between `<!-- capture: NAME -->` and `<!-- /capture -->`, inside its
/// ```text fence.
fn captured(page: &str, name: &str) -> (usize, usize) {
    let open = format!("<!-- capture: {name} -->\n```text\n");
    let start = page.find(&open).expect("the capture's marker") + open.len();
    let end = start
        + page[start..]
            .find("```\n<!-- /capture -->")
            .expect("its end");
    (start, end)
}

#[test]
fn the_getting_started_capture_is_what_the_terminal_shows() {
    let p = Project::new(
        "[agents.helper]\nmodel = \"scripted:turns.json\"\ntools = [\"Read\", \"Edit\"]\n",
        json!([
            {"tool_calls": [{"name": "Read", "input": {"file_path": "notes.md"}}]},
            {"tool_calls": [{"name": "Edit", "input": {"file_path": "notes.md", "old_string": "recieve", "new_string": "receive"}}]},
            {"text": "Fixed the typo in notes.md: **recieve** is now **receive**."}
        ]),
    );
    std::fs::write(
        p.file("notes.md"),
        "# Notes\n\nWe recieve the logs daily.\nThey are kept a week.\n",
    )
    .unwrap();
    let screen = screen_after(
        &p,
        &["run", "fix the typo in notes.md"],
        &[("[l]ater? ", "a\r")],
        false,
    );
    let shown = steady(&screen, p.path());
    assert!(shown.contains("-We recieve the logs daily."), "{shown}");
    assert!(shown.contains("Fixed the typo"), "{shown}");
    let page_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/getting-started.md");
    let page = std::fs::read_to_string(&page_path).unwrap();
    let (start, end) = captured(&page, "approval");
    let expected = format!("$ agentry run \"fix the typo in notes.md\"\n{shown}\n");
    if std::env::var_os("AGENTRY_UPDATE_CAPTURES").is_some() {
        let updated = format!("{}{expected}{}", &page[..start], &page[end..]);
        std::fs::write(&page_path, updated).unwrap();
        return;
    }
    assert_eq!(
        &page[start..end],
        expected,
        "the capture in docs/src/getting-started.md is stale: AGENTRY_UPDATE_CAPTURES=1 cargo nextest run -p agentry-cli -E 'test(getting_started_capture)'"
    );
}
