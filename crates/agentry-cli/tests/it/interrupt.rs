//! A run killed or cancelled during a tool call, finished with `agentry resume`; an approval
//! answered at a real terminal.

use crate::common::Project;
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CONFIG: &str = r#"
[agents.worker]
model = "scripted:turns.json"
tools = ["Bash", "Write"]

[tools.Bash]
approval = false

[store]
lease_ttl = "1s"
"#;

/// A Bash call that marks its start, takes a while, and marks its end.
fn turns() -> Value {
    json!([
        {"tool_calls": [{"name": "Bash", "input": {"command": "echo started >> marks; sleep 3; echo done >> marks"}}]},
        {"text": "Finished."}
    ])
}

fn spawn_run(p: &Project) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("agentry"))
        .current_dir(p.path())
        .args(["--json", "run", "work"])
        .env("AGENTRY_HOME", p.home())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentry starts")
}

/// Waits until the Bash call has started.
fn wait_for_start(p: &Project) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(p.file("marks")).is_ok_and(|m| m.contains("started")) {
        assert!(Instant::now() < deadline, "the Bash call never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills `child` (SIGKILL) once its Bash call has started.
fn kill_mid_call(mut child: Child, p: &Project) {
    wait_for_start(p);
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
}

/// `agentry cancel RUN` ends the run as cancelled, in one command and within `limit`.
fn cancel_within(p: &Project, run: &str, limit: Duration) {
    let started = Instant::now();
    let (lines, code) = p.json(&["cancel", run]);
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(
        lines.last().unwrap()["stop"]["kind"],
        "cancelled",
        "{lines:?}"
    );
    assert!(started.elapsed() < limit, "{:?}", started.elapsed());
}

/// The one run the store holds.
fn the_run(p: &Project) -> Value {
    let (runs, code) = p.json(&["runs"]);
    assert_eq!(code, 0);
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

fn resume(p: &Project, run: &str) -> (Vec<Value>, i32) {
    // A killed process's lease expires after the configured 1 s.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (lines, code) = p.json(&["resume", run]);
        if code != 5 || Instant::now() > deadline {
            return (lines, code);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_run_killed_during_a_tool_call_finishes_with_resume() {
    let p = Project::new(CONFIG, turns());
    kill_mid_call(spawn_run(&p), &p);

    let run = the_run(&p);
    assert_eq!(
        run["status"], "running",
        "a killed run is left running: {run}"
    );
    let id = run["run_id"].as_str().unwrap();
    let (lines, code) = resume(&p, id);
    assert_eq!(code, 0, "{lines:?}");
    let last = lines.last().unwrap();
    assert_eq!(last["output"], "Finished.");
    // The call in flight was issued again (with the same call id), and completed.
    let calls = lines.iter().filter(|l| l["type"] == "tool_started").count();
    assert_eq!(calls, 1, "{lines:?}");
    assert_eq!(the_run(&p)["status"], "finished");
}

#[test]
fn ctrl_c_cancels_cleanly_and_resume_continues() {
    let p = Project::new(CONFIG, turns());
    let child = spawn_run(&p);
    wait_for_start(&p);
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "a cancelled run exits 130");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("agentry resume"), "{stderr}");
    // Cancelling dropped the call: its process group was killed before it marked its end.
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(
        std::fs::read_to_string(p.file("marks")).unwrap(),
        "started\n"
    );

    let run = the_run(&p);
    assert_eq!(run["status"], "cancelled", "{run}");
    let (lines, code) = resume(&p, run["run_id"].as_str().unwrap());
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(lines.last().unwrap()["output"], "Finished.");
    assert_eq!(
        std::fs::read_to_string(p.file("marks")).unwrap(),
        "started\nstarted\ndone\n"
    );
}

/// True while process `pid` exists (and is not a zombie waiting for its parent).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat.split(") ").nth(1).is_some_and(|s| s.starts_with('Z')))
}

#[test]
fn sigterm_and_sighup_cancel_like_ctrl_c_and_leave_no_process_of_the_tool_behind() {
    for signal in ["-TERM", "-HUP"] {
        let p = Project::new(
            CONFIG,
            json!([
                {"tool_calls": [{"name": "Bash", "input": {"command": "sleep 60 & echo $! > child.pid; echo started >> marks; wait"}}]},
                {"text": "Finished."}
            ]),
        );
        let child = spawn_run(&p);
        wait_for_start(&p);
        let pid = std::fs::read_to_string(p.file("child.pid")).unwrap();
        let pid = pid.trim();
        assert!(alive(pid), "{signal}: the tool's background process runs");
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{signal}: {stderr}");
        assert!(stderr.contains("cancelling"), "{signal}: {stderr}");
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            !alive(pid),
            "{signal}: the tool's process {pid} was stopped"
        );
        let run = the_run(&p);
        assert_eq!(run["status"], "cancelled", "{signal}: {run}");
    }
}

#[test]
fn cancel_from_another_process_stops_a_live_run_and_resume_continues_it() {
    // The default 30 s lease: the driving process holds it throughout, so `cancel` cannot take
    // the run over and must ask that process.
    let p = Project::new(&CONFIG.replace("lease_ttl = \"1s\"", ""), turns());
    let child = spawn_run(&p);
    wait_for_start(&p);
    let run = the_run(&p);
    let id = run["run_id"].as_str().unwrap();
    // Seen at the next renewal (within 2 s), well before the 30 s lease would run out.
    cancel_within(&p, id, Duration::from_secs(10));
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "the driving process reports the cancel"
    );
    // The Bash call in flight was dropped (its process group killed) before it marked its end.
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(
        std::fs::read_to_string(p.file("marks")).unwrap(),
        "started\n"
    );
    assert_eq!(the_run(&p)["status"], "cancelled");
    // The request was cleared when the run was claimed again: resume finishes it.
    let (lines, code) = resume(&p, id);
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(lines.last().unwrap()["output"], "Finished.");
}

/// A run on a pseudo-terminal that asks to approve a Write, stopped at the prompt.
fn at_the_approval_prompt() -> (Project, expectrl::Session) {
    let p = Project::new(
        CONFIG,
        json!([
            {"tool_calls": [{"name": "Write", "input": {"file_path": "out.txt", "content": "yes"}}]},
            {"text": "Wrote it."}
        ]),
    );
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("agentry"));
    cmd.current_dir(p.path())
        .args(["run", "write it"])
        .env("AGENTRY_HOME", p.home())
        .env("NO_COLOR", "1");
    let mut session = expectrl::Session::spawn(cmd).expect("a pseudo-terminal");
    session.set_expect_timeout(Some(Duration::from_secs(30)));
    session.expect("[a]pprove").expect("the approval prompt");
    (p, session)
}

#[test]
fn an_approval_is_answered_at_the_terminal() {
    let (p, mut session) = at_the_approval_prompt();
    session.send_line("a").unwrap();
    session.expect("Wrote it.").expect("the run goes on");
    session.expect("final answer").expect("the summary");
    assert_eq!(std::fs::read_to_string(p.file("out.txt")).unwrap(), "yes");
}

#[test]
fn ctrl_c_at_the_approval_prompt_leaves_the_run_paused() {
    let (p, mut session) = at_the_approval_prompt();
    session.send("\x03").unwrap();
    session
        .expect("the run stays paused")
        .expect("Ctrl-C ends the prompt");
    let status = session.get_process().wait().unwrap();
    assert_eq!(
        status,
        expectrl::WaitStatus::Exited(session.get_process().pid(), 3),
        "exit code 3: waiting for approval"
    );
    assert!(!p.file("out.txt").exists());
    assert_eq!(the_run(&p)["status"], "awaiting_approval");
}

#[test]
fn a_run_whose_driver_died_is_listed_as_such_and_resume_names_the_call_it_runs_again() {
    let p = Project::new(CONFIG, turns());
    let mut child = spawn_run(&p);
    wait_for_start(&p);
    // While its driver lives, resume refuses at once, before any model is loaded.
    let run = the_run(&p);
    let id = run["run_id"].as_str().unwrap().to_owned();
    assert_eq!(run["driver_gone"], false, "{run}");
    let out = p.agentry().args(["resume", &id]).output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("driven by another process"), "{stderr}");

    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    // Once the killed driver's lease (1 s) lapses, the run is shown as resumable.
    let deadline = Instant::now() + Duration::from_secs(20);
    while the_run(&p)["driver_gone"] != true {
        assert!(Instant::now() < deadline, "the lease never lapsed");
        std::thread::sleep(Duration::from_millis(200));
    }
    let listing = p.agentry().args(["runs"]).output().unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout);
    assert!(
        listing.contains("running (driver gone, resumable)"),
        "{listing}"
    );
    // Resume says which call it runs again, and why that matters.
    let out = p
        .agentry()
        .args(["--json", "resume", &id])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("resuming runs 1 call again")
            && stderr.contains("may be done twice")
            && stderr.contains("Bash"),
        "{stderr}"
    );
    assert_eq!(the_run(&p)["status"], "finished");
}

#[test]
fn cancel_of_a_run_whose_driver_died_takes_effect_when_its_lease_lapses_with_one_command() {
    let p = Project::new(CONFIG, turns());
    kill_mid_call(spawn_run(&p), &p);
    // At once: the dead driver's lease (1 s) still holds the run.
    let id = the_run(&p)["run_id"].as_str().unwrap().to_owned();
    cancel_within(&p, &id, Duration::from_secs(15));
    assert_eq!(the_run(&p)["status"], "cancelled");
}
