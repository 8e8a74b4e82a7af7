//! Bash: output and exit codes, the working directory, the output cap, and the whole process
//! group killed on timeout and on cancellation, so that no process is left behind.

use crate::common::{Sandbox, call, ctx};
use agentry::Tool;
use agentry::prelude::*;
use agentry_tools::Bash;
use std::time::{Duration, Instant};

/// True while the process `pid` exists and is not a zombie.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        // The state follows the command name in parentheses.
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
    }
}

/// The live processes (not zombies) of the process group `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the name: state, ppid, pgrp.
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && !fields[0].starts_with('Z') {
            found.push(pid);
        }
    }
    found
}

/// Waits up to two seconds for every pid to be gone.
async fn all_gone(pids: &[i32]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if pids.iter().all(|p| !alive(*p)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// The pids written one per line into `file`, once `count` are there.
async fn pids_in(file: &std::path::Path, count: usize) -> Vec<i32> {
    for _ in 0..250 {
        if let Ok(text) = std::fs::read_to_string(file) {
            let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if pids.len() >= count {
                return pids;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the command did not record its pids");
}

/// Starts two background sleeps and a foreground one, recording all three pids and the shell's.
const SLEEPERS: &str =
    "sleep 100 & echo $! >> pids; sleep 100 & echo $! >> pids; echo $$ >> pids; sleep 100";

#[tokio::test]
async fn output_and_a_non_zero_exit_code_come_back() {
    let sb = Sandbox::new();
    let bash = Bash::new(&sb.ws);
    let out = call(&bash, json!({"command": "echo hello; echo oops >&2"}))
        .await
        .unwrap();
    assert_eq!(out, "hello\noops\n");
    let out = call(&bash, json!({"command": "echo partial; exit 3"}))
        .await
        .unwrap();
    assert_eq!(out, "partial\n\n[exit code: 3]");
    let out = call(&bash, json!({"command": "true"})).await.unwrap();
    assert_eq!(out, "(no output)");
}

#[tokio::test]
async fn it_runs_in_the_workspace_root_with_empty_stdin() {
    let sb = Sandbox::new();
    sb.file("marker.txt", "here");
    let bash = Bash::new(&sb.ws);
    let out = call(&bash, json!({"command": "pwd; cat marker.txt; cat"}))
        .await
        .unwrap();
    assert_eq!(out, format!("{}\nhere", sb.root().display()));
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let sb = Sandbox::new();
    let bash = Bash::new(&sb.ws);
    let started = Instant::now();
    let err = call(&bash, json!({"command": SLEEPERS, "timeout": 700}))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(err.contains("timed out after 700 ms"), "{err}");
    assert!(
        err.contains("every process it started were killed"),
        "{err}"
    );
    let pids = pids_in(&sb.root().join("pids"), 3).await;
    assert!(all_gone(&pids).await, "still running: {pids:?}");
    // The shell led the group: nothing of it is left, the foreground sleep included.
    assert_eq!(group_members(pids[2]), Vec::<i32>::new());
}

#[tokio::test]
async fn a_dropped_call_kills_the_whole_process_group() {
    let sb = Sandbox::new();
    let bash = Bash::new(&sb.ws);
    let mut call = bash.call(json!({"command": SLEEPERS}), ctx("Bash"));
    // Run the call until its processes are up, then drop it, as a cancelled run does.
    let pids_file = sb.root().join("pids");
    let pids = tokio::select! {
        _ = &mut call => panic!("the command ended by itself"),
        pids = pids_in(&pids_file, 3) => pids,
    };
    assert!(pids.iter().all(|p| alive(*p)), "not started: {pids:?}");
    let members = group_members(pids[2]);
    assert!(pids.iter().all(|p| members.contains(p)), "{members:?}");
    drop(call);
    assert!(all_gone(&pids).await, "still running: {pids:?}");
    assert_eq!(group_members(pids[2]), Vec::<i32>::new());
}

#[tokio::test]
async fn background_processes_do_not_outlive_the_command() {
    let sb = Sandbox::new();
    let bash = Bash::new(&sb.ws);
    let started = Instant::now();
    let out = call(
        &bash,
        json!({"command": "sleep 100 & echo $! > pids; echo started"}),
    )
    .await
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(out.starts_with("started\n"), "{out}");
    assert!(
        out.contains("kept its output open; they were stopped"),
        "{out}"
    );
    let pids = pids_in(&sb.root().join("pids"), 1).await;
    assert!(all_gone(&pids).await, "still running: {pids:?}");
}

#[tokio::test]
async fn output_over_the_cap_is_cut_in_the_middle_with_a_marker() {
    let sb = Sandbox::new();
    let bash = Bash::new(&sb.ws).output_cap(1000);
    let out = call(
        &bash,
        json!({"command": "echo BEGIN; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END >&2"}),
    )
    .await
    .unwrap();
    assert!(out.starts_with("BEGIN\n"), "{}", &out[..50]);
    assert!(out.trim_end().ends_with("END"), "{out}");
    // 6 + 100000 + 1 + 4 bytes came; 1000 were kept.
    assert!(
        out.contains(
            "[... 99011 bytes of output cut here (of 100011 in all; the output cap is 1000 bytes)"
        ),
        "{out}"
    );
    assert!(out.len() < 1300, "{}", out.len());
}

#[tokio::test]
async fn a_call_cannot_ask_for_more_than_the_maximum_timeout() {
    let sb = Sandbox::new();
    let bash = Bash::new(&sb.ws).max_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let err = call(&bash, json!({"command": "sleep 30", "timeout": 60000}))
        .await
        .unwrap_err();
    assert!(err.contains("timed out after 300 ms"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The runtime's own limit for the call leaves room for the command's.
    assert!(Tool::timeout(&bash).unwrap() > Duration::from_millis(300));
}

#[test]
fn it_needs_approval_unless_configured_otherwise() {
    let sb = Sandbox::new();
    assert!(Bash::new(&sb.ws).needs_approval());
    assert!(!Bash::new(&sb.ws).approval(false).needs_approval());
    assert_eq!(Bash::new(&sb.ws).spec().name, "Bash");
    let bash = Bash::new(&sb.ws);
    let params = &bash.spec().parameters;
    assert_eq!(params["required"], json!(["command"]));
    assert!(params["properties"]["timeout"].is_object());
}

#[tokio::test]
async fn sh_works_as_the_shell() {
    let sb = Sandbox::new();
    let bash = Bash::new(&sb.ws).shell("/bin/sh");
    let out = call(&bash, json!({"command": "echo $0"})).await.unwrap();
    assert_eq!(out, "/bin/sh\n");
}
