//! A server on a port of its own, and clients for it.

use agentry::prelude::*;
use agentry::{Message, RunStore, ScriptedTurn};
use agentry_server::Server;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use std::time::Duration;
use tokio::sync::oneshot;

/// A server listening on 127.0.0.1, stopped when dropped or shut down.
pub struct TestServer {
    pub url: String,
    stop: Option<oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<Result<(), agentry_server::ServerError>>>,
}

impl TestServer {
    /// Serves `server` on a free port.
    pub async fn start(server: Server) -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(server.serve(listener, async {
            let _ = stopped.await;
        }));
        TestServer {
            url,
            stop: Some(stop),
            served: Some(served),
        }
    }

    /// Shuts the server down gracefully and waits until it has.
    pub async fn shut_down(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(20), self.served.take().unwrap())
            .await
            .expect("the server shut down within 20 s")
            .unwrap()
            .unwrap();
    }

    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = reqwest::get(self.at(path)).await.unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = reqwest::Client::new()
            .post(self.at(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    /// Starts a run and returns its id.
    pub async fn start_run(&self, body: Value) -> String {
        let (status, run) = self.post("/v1/runs", body).await;
        assert_eq!(status, 202, "{run}");
        run["run_id"].as_str().unwrap().to_owned()
    }

    /// Waits until the run is in `status` (10 s at most).
    pub async fn wait_status(&self, run_id: &str, status: &str) -> Value {
        self.wait_status_within(run_id, status, Duration::from_secs(10))
            .await
    }

    /// Waits until the run is in `status` (`limit` at most).
    pub async fn wait_status_within(&self, run_id: &str, status: &str, limit: Duration) -> Value {
        for _ in 0..limit.as_millis() / 20 {
            let (code, run) = self.get(&format!("/v1/runs/{run_id}")).await;
            if code == 200 && run["status"] == status {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("run {run_id} never became {status}");
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(served) = &self.served {
            served.abort();
        }
    }
}

/// One Server-Sent Event as a client sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Sse {
    pub id: String,
    pub kind: String,
    pub data: Value,
}

/// Reads a run's event stream from `after` (as `Last-Event-ID`) until it ends or `until`
/// says to stop (the event it stopped at included).
pub async fn read_events(
    url: &str,
    after: Option<&str>,
    mut until: impl FnMut(&Sse) -> bool,
) -> Vec<Sse> {
    let mut request = reqwest::Client::new().get(url);
    if let Some(after) = after {
        request = request.header("Last-Event-ID", after);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut events = response.bytes_stream().eventsource();
    let mut seen = Vec::new();
    let read = async {
        while let Some(event) = events.next().await {
            let event = event.unwrap();
            let sse = Sse {
                id: event.id,
                kind: event.event,
                data: serde_json::from_str(&event.data).unwrap(),
            };
            let stop = until(&sse);
            seen.push(sse);
            if stop {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("the stream ended within 20 s");
    seen
}

/// The events a run's history records (id and kind), leaving out streamed pieces (whose ids
/// hold a dot).
pub fn recorded(events: &[Sse]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| !e.id.contains('.'))
        .map(|e| (e.id.clone(), e.kind.clone()))
        .collect()
}

/// Every event of the stream until it ends.
pub async fn all_events(url: &str, after: Option<&str>) -> Vec<Sse> {
    read_events(url, after, |_| false).await
}

/// A SQLite store in a temporary directory (kept while the returned guard lives).
pub async fn sqlite() -> (
    agentry_store::SqliteStore,
    tempfile::TempDir,
    std::path::PathBuf,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let store = agentry_store::SqliteStore::open(&path).await.unwrap();
    (store, dir, path)
}

/// A database of its own on the Postgres server `AGENTRY_TEST_POSTGRES_URL` names, dropped by
/// [`PostgresDb::drop_db`]; `None` (the caller reports the test skipped) when no server is
/// named, which CI never allows.
pub struct PostgresDb {
    /// The database's URL.
    pub url: String,
    name: String,
    admin: sqlx::PgConnection,
}

impl PostgresDb {
    /// Creates the database, or says (on stderr) why the test is skipped.
    pub async fn create() -> Option<PostgresDb> {
        use sqlx::Connection;
        let Ok(server) = std::env::var("AGENTRY_TEST_POSTGRES_URL") else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but AGENTRY_TEST_POSTGRES_URL is not set"
            );
            eprintln!("skipping: no Postgres server (set AGENTRY_TEST_POSTGRES_URL)");
            return None;
        };
        let name = format!("agentry_server_test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = sqlx::PgConnection::connect(&server).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .unwrap();
        let url = match server.rsplit_once('/') {
            Some((base, _)) => format!("{base}/{name}"),
            None => unreachable!("a Postgres URL has a path"),
        };
        Some(PostgresDb { url, name, admin })
    }

    /// A store on the database.
    pub async fn store(&self) -> agentry_store::PostgresStore {
        agentry_store::PostgresStore::connect(&self.url)
            .await
            .unwrap()
    }

    /// Drops the database (its connections too).
    pub async fn drop_db(mut self) {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE {} WITH (FORCE)",
            self.name
        )))
        .execute(&mut self.admin)
        .await
        .unwrap();
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct Wait {
    /// Milliseconds.
    pub ms: u64,
}

#[derive(Deserialize, JsonSchema)]
pub struct Cmd {
    pub command: String,
}

/// Answers "echo: INPUT" after streaming it in pieces (an image or a file in the input as the
/// line that describes it).
pub fn echo() -> Agent<(), String> {
    let model = ScriptedModel::from_fn(|_, req| {
        let said = req
            .messages
            .iter()
            .rev()
            .find(|m| matches!(m, Message::User { .. }))
            .and_then(|m| m.content())
            .map(|c| c.describe().into_owned())
            .unwrap_or_default();
        let turns = req
            .messages
            .iter()
            .filter(|m| matches!(m, Message::User { .. }))
            .count();
        ScriptedTurn::new().with_text_deltas(["echo", ": ", &said, &format!(" (turn {turns})")])
    });
    Agent::builder("echo")
        .description("Says back what it is told.")
        .model(model)
        .build()
        .unwrap()
}

/// Calls `wait` `steps` times (each `ms` long, streaming text as it goes), then answers "done".
pub fn slow(steps: usize, ms: u64) -> Agent<(), String> {
    let model = ScriptedModel::from_fn(move |_, req| {
        let done = req
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool(_)))
            .count();
        if done < steps {
            ScriptedTurn::new()
                .with_text_deltas(["waiting ", &format!("{}", done + 1)])
                .with_tool_call("wait", json!({"ms": ms}))
        } else {
            ScriptedTurn::new().with_text_deltas(["do", "ne"])
        }
    });
    Agent::builder("slow")
        .model(model)
        .tool(tool("wait", "Waits.", |a: Wait, _c: ToolCtx| async move {
            tokio::time::sleep(Duration::from_millis(a.ms)).await;
            Ok(format!("waited {} ms", a.ms))
        }))
        .build()
        .unwrap()
}

/// Asks to run a shell command (a call that needs approval), then reports what it got.
pub fn ops() -> Agent<(), String> {
    let model = ScriptedModel::from_fn(|_, req| {
        match req.messages.iter().rev().find_map(|m| m.tool_result()) {
            Some(result) => ScriptedTurn::text(format!("result: {}", result.content)),
            None => ScriptedTurn::new().with_tool_call_id(
                "c1",
                "shell",
                json!({"command": "systemctl restart api --token sk-live-0123456789abcdef"}),
            ),
        }
    });
    Agent::builder("ops")
        .model(model)
        .tool(
            tool(
                "shell",
                "Runs a command.",
                |a: Cmd, _c: ToolCtx| async move { Ok(format!("ran {} chars", a.command.len())) },
            )
            .needs_approval(),
        )
        .build()
        .unwrap()
}

/// A runtime on `store` that masks `sk-live-...` keys.
pub fn redacting(store: impl RunStore) -> Runtime {
    Runtime::new().store(store).redact(
        agentry::builtins::Redactor::new()
            .pattern(r"sk-live-\w+")
            .unwrap(),
    )
}

/// A server of the echo, slow and ops agents on `store`.
pub fn server_on(store: impl RunStore, lease: Duration) -> Server {
    builder_on(store, lease).build().unwrap()
}

/// [`server_on`]'s builder, for a server with more agents.
pub fn builder_on(store: impl RunStore, lease: Duration) -> agentry_server::ServerBuilder {
    with_agents(Server::builder(redacting(store).lease_ttl(lease)))
        .poll_interval(Duration::from_millis(50))
}

/// `builder` serving the echo, slow, ops, team and notes agents, echo by default.
pub fn with_agents(builder: agentry_server::ServerBuilder) -> agentry_server::ServerBuilder {
    builder
        .agent(echo())
        .agent(slow(3, 150))
        .agent(ops())
        .agent(team())
        .agent(notes())
        .default_agent("echo")
}

/// A guard that blocks the `note` tool ("no notes today"): today's hooks, for replays.
pub fn no_notes() -> impl agentry::hooks::IntoHook {
    on::before_tool(|mut ev, _ctx| async move {
        if ev.name() == "note" {
            ev.block("no notes today");
        }
        Ok(ev)
    })
    .named("no-notes")
}

/// Reasons (streamed as thinking), then answers.
pub fn thinker() -> Agent<(), String> {
    Agent::builder("thinker")
        .model(ScriptedModel::from_fn(|_, _| {
            ScriptedTurn::new()
                .with_thinking("The user asks why; ")
                .with_thinking("because is an answer.")
                .with_text_deltas(["Because", "."])
        }))
        .build()
        .unwrap()
}

/// The kinds of `events`, in order.
pub fn kinds(events: &[Sse]) -> Vec<&str> {
    events.iter().map(|e| e.kind.as_str()).collect()
}

/// A lead that asks its `researcher` sub-agent, tries a `delete` a hook blocks, then answers.
pub fn team() -> Agent<(), String> {
    let researcher = Agent::builder("researcher")
        .model(ScriptedModel::from_fn(|_, _| {
            ScriptedTurn::new().with_text_deltas(["found ", "three ", "papers"])
        }))
        .build()
        .unwrap();
    let lead = ScriptedModel::from_fn(|_, req| {
        let results = req
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool(_)))
            .count();
        match results {
            0 => ScriptedTurn::new().with_tool_call("researcher", json!({"input": "find papers"})),
            1 => ScriptedTurn::new().with_tool_call("delete", json!({"path": "/data"})),
            _ => ScriptedTurn::new().with_text_deltas(["All ", "done."]),
        }
    });
    Agent::builder("team")
        .model(lead)
        .sub_agent(&researcher)
        .tool(tool(
            "delete",
            "Deletes a path.",
            |_: Cmd, _c: ToolCtx| async move { Ok("deleted") },
        ))
        .with(
            on::before_tool(|mut ev, _ctx| async move {
                if ev.name() == "delete" {
                    ev.block("deleting is not allowed here");
                }
                Ok(ev)
            })
            .named("no-deletes"),
        )
        .build()
        .unwrap()
}

/// Its state: what was noted.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Notes {
    pub items: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
pub struct Text {
    pub text: String,
}

/// Notes two things in its state (a tool that changes it), then answers.
pub fn notes() -> Agent<Notes, String> {
    let model = ScriptedModel::from_fn(|_, req| {
        let noted = req
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool(_)))
            .count();
        match noted {
            0 => ScriptedTurn::new().with_tool_call("note", json!({"text": "milk"})),
            1 => ScriptedTurn::new().with_tool_call("note", json!({"text": "eggs"})),
            _ => ScriptedTurn::new().with_text_deltas(["noted ", "both"]),
        }
    });
    Agent::builder("notes")
        .model(model)
        .state(Notes::default())
        .tool(tool(
            "note",
            "Notes a thing.",
            |a: Text, ctx: ToolCtx| async move {
                ctx.update_state(|s: &mut Notes| s.items.push(a.text.clone()))?;
                Ok("noted")
            },
        ))
        .build()
        .unwrap()
}
