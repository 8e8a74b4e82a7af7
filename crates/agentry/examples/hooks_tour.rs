//! A tour of the hooks: an agent that plans a weekend trip.
//!
//! It shows, in one run:
//! - two typed tools (`get_weather`, `book_hotel`) that update a typed state (`Trip`);
//! - a sub-agent (`local_guide`) called like a tool, whose events carry the path `planner/local_guide`;
//! - guard hooks at priority 200: one blocks a forbidden destination before any tool runs, one
//!   stops the run when it spends too many tokens;
//! - an audit-log plugin (`impl Hook`) registered on the runtime as advisory;
//! - the run's event stream (text deltas, tool calls, state patches), then its typed result.
//!
//! Run it with `cargo run -p agentry --example hooks_tour`.
//!
//! The model is a `ScriptedModel`, which plays back the turns written below exactly as a real
//! model would stream them (text deltas, parallel tool calls, token usage), so every hook fires
//! the same way on every run, instantly. The quick start (`cargo run -p agentry-local --example
//! quickstart`) runs an agent on a real model in-process.

use agentry::Json;
use agentry::hooks::{
    AfterTool, BeforeTool, Events, Hook, HookFailed, HookResult, RunEnd, RunStart, StateChange,
};
use agentry::prelude::*;
use agentry::{RunOptions, ScriptedTurn};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The state of one run: typed, serializable, updated by tools (and hooks).
#[derive(Default, Clone, Debug, Serialize, Deserialize)]
struct Trip {
    /// Cities whose weather was checked.
    visited: Vec<String>,
    /// Hotels booked.
    bookings: Vec<Booking>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Booking {
    city: String,
    hotel: String,
    nights: u32,
}

/// The input of `get_weather`: its JSON Schema is derived and shown to the model.
#[derive(Deserialize, JsonSchema)]
struct City {
    /// The city, e.g. "Lisbon".
    city: String,
}

/// The input of `book_hotel`.
#[derive(Deserialize, JsonSchema)]
struct HotelRequest {
    /// Where to book.
    city: String,
    /// How many nights (at least 1).
    #[schemars(range(min = 1))]
    nights: u32,
}

/// What `get_weather` returns; tools can return any `Serialize` type wrapped in `Json`.
#[derive(Serialize)]
struct Forecast {
    city: String,
    sky: &'static str,
    high_c: i32,
}

/// An audit-log plugin: one type, several events (the events it does not want cost nothing).
/// It keeps its lines in memory so that they can be printed after the run, apart from the
/// event stream; a service would send them to its log or audit sink instead.
#[derive(Clone)]
struct AuditLog {
    started: Instant,
    lines: Arc<Mutex<Vec<String>>>,
}

impl AuditLog {
    fn new() -> Self {
        AuditLog {
            started: Instant::now(),
            lines: Arc::default(),
        }
    }

    fn record(&self, ctx: &HookCtx, line: String) {
        let ms = self.started.elapsed().as_millis();
        let line = format!("{ms:>4}ms [{}] {line}", ctx.agent_path());
        self.lines.lock().unwrap().push(line);
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

impl Hook for AuditLog {
    fn wants(&self) -> Events {
        Events::RUN_START
            | Events::BEFORE_TOOL
            | Events::AFTER_TOOL
            | Events::STATE_CHANGE
            | Events::RUN_END
            | Events::HOOK_FAILED
    }

    async fn run_start(&self, ev: RunStart, ctx: &HookCtx) -> HookResult<RunStart> {
        self.record(ctx, format!("run started: {:?}", ev.input));
        Ok(ev)
    }

    // Runs after the priority-200 guard: a call the guard blocked still gets here, read-only (the
    // guard's decision stands), and its error result reaches `after_tool`.
    async fn before_tool(&self, ev: BeforeTool, ctx: &HookCtx) -> HookResult<BeforeTool> {
        self.record(
            ctx,
            format!("call {} {} ({})", ev.name(), ev.input, ev.call_id()),
        );
        Ok(ev)
    }

    async fn after_tool(&self, ev: AfterTool, ctx: &HookCtx) -> HookResult<AfterTool> {
        let r = ev.result();
        let outcome = if r.is_error { "error" } else { "ok" };
        self.record(ctx, format!("done {} {outcome} ({})", r.name, r.call_id));
        Ok(ev)
    }

    async fn state_change(&self, ev: StateChange, ctx: &HookCtx) -> HookResult<StateChange> {
        self.record(ctx, format!("state changed by {:?}", ev.source()));
        Ok(ev)
    }

    async fn run_end(&self, ev: RunEnd, ctx: &HookCtx) -> HookResult<RunEnd> {
        let (steps, tokens) = (ev.steps(), ev.usage().total());
        self.record(
            ctx,
            format!("run ended ({}): {steps} steps, {tokens} tokens", ev.stop()),
        );
        Ok(ev)
    }

    async fn hook_failed(&self, ev: HookFailed, ctx: &HookCtx) -> HookResult<HookFailed> {
        self.record(
            ctx,
            format!(
                "hook `{}` failed on {}: {}",
                ev.hook(),
                ev.event(),
                ev.error()
            ),
        );
        Ok(ev)
    }
}

/// What the model answers, turn by turn (see the note at the top of the file).
fn planner_model() -> ScriptedModel {
    ScriptedModel::new()
        .turn(
            ScriptedTurn::new()
                .with_text("Let me compare the weather in both cities first.")
                .with_tool_call("get_weather", json!({"city": "Lisbon"}))
                .with_tool_call("get_weather", json!({"city": "Porto"}))
                .with_usage(412, 38),
        )
        .turn(
            ScriptedTurn::new()
                .with_text("Lisbon will be sunnier, so I'll book two nights there. ")
                .with_text("You also asked about Atlantis; trying that too.")
                .with_tool_call("book_hotel", json!({"city": "Lisbon", "nights": 2}))
                .with_tool_call("book_hotel", json!({"city": "Atlantis", "nights": 1}))
                .with_usage(590, 52),
        )
        .turn(
            ScriptedTurn::new()
                .with_tool_call(
                    "local_guide",
                    json!({"input": "One thing to do on a sunny Saturday in Lisbon"}),
                )
                .with_usage(701, 24),
        )
        .turn(
            ScriptedTurn::new()
                .with_text_deltas([
                    "Your weekend: 2 nights at Casa Alfama in Lisbon ",
                    "(sunny, 24 °C; Porto looks rainy). ",
                    "On Saturday, ride tram 28 up to Alfama and stay for the sunset. ",
                    "Atlantis could not be booked: it is not on any map.",
                ])
                .with_usage(788, 61),
        )
}

fn guide_model() -> ScriptedModel {
    ScriptedModel::new().turn(
        ScriptedTurn::new()
            .with_text_deltas([
                "Ride tram 28 up to Alfama, ",
                "then watch the sunset from Miradouro da Senhora do Monte.",
            ])
            .with_usage(95, 22),
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), agentry::Error> {
    // Two typed tools. Their input types give the JSON Schema the model sees; arguments are
    // validated against it before the closure runs.
    let get_weather = tool(
        "get_weather",
        "The weekend forecast for a city",
        |a: City, ctx: ToolCtx| async move {
            tokio::time::sleep(Duration::from_millis(20)).await; // a real weather API takes a moment
            let (sky, high_c) = match a.city.as_str() {
                "Lisbon" => ("sunny", 24),
                "Porto" => ("rain", 17),
                _ => ("cloudy", 19),
            };
            // Fires StateChange (source: Tool("get_weather")) and a StatePatch stream event.
            ctx.update_state(|s: &mut Trip| s.visited.push(a.city.clone()))?;
            Ok(Json(Forecast {
                city: a.city,
                sky,
                high_c,
            }))
        },
    );
    let book_hotel = tool(
        "book_hotel",
        "Book a hotel room in a city",
        |a: HotelRequest, ctx: ToolCtx| async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            let hotel = match a.city.as_str() {
                "Lisbon" => "Casa Alfama",
                _ => "Hotel Central",
            }
            .to_string();
            let booking = Booking {
                city: a.city.clone(),
                hotel: hotel.clone(),
                nights: a.nights,
            };
            ctx.update_state(|s: &mut Trip| s.bookings.push(booking))?;
            Ok(format!(
                "Booked {} nights at {hotel}, {} (ref {})",
                a.nights,
                a.city,
                ctx.call_id()
            ))
        },
    );

    // A sub-agent: the planner's model calls it like a tool, with {"input": "..."}.
    let local_guide = Agent::builder("local_guide")
        .description("Suggests one thing to do in a city")
        .instructions("You are a local guide. Answer with one concrete suggestion.")
        .model(guide_model())
        .build()?;

    let planner = Agent::builder("planner")
        .instructions("Plan short trips. Check the weather first, then book the sunnier city.")
        .model(planner_model())
        .tool(get_weather)
        .tool(book_hotel)
        .sub_agent(&local_guide)
        .state(Trip::default())
        .max_steps(10)
        // A guard: runs before every other BeforeTool hook (priority 200) and blocks the call;
        // the model sees the reason as the tool's error result.
        .with(
            on::before_tool(|mut ev, _ctx| async move {
                if ev.input["city"] == "Atlantis" {
                    ev.block("Atlantis is not on any map");
                }
                Ok(ev)
            })
            .named("destination-guard")
            .priority(200),
        )
        // Another guard: stop the run once it has spent its token budget.
        .with(
            on::after_step(|mut ev, _ctx| async move {
                if ev.usage().total() > 20_000 {
                    ev.stop("token budget of 20000 spent");
                }
                Ok(ev)
            })
            .named("token-budget")
            .priority(200),
        )
        .build()?;

    // Runtime-scope hooks see every run, sub-agent runs included. Advisory: should the audit
    // log fail (an error, a panic or a timeout), the failure is reported as HookFailed and the
    // run goes on.
    let audit = AuditLog::new();
    let runtime = Runtime::new().with(audit.clone().advisory().timeout(Duration::from_secs(1)));

    let input = "Plan a sunny weekend: compare Lisbon and Porto, book two nights in the better \
                 one, and my partner insists we also book Atlantis.";
    println!("user: {input}");

    let mut run = runtime
        .run(&planner, input)
        .with(RunOptions::new().session("demo").user("u-7"))
        .start();
    let mut out = std::io::stdout();
    let mut mid_line = false;
    while let Some(ev) = run.events().next().await {
        // Text deltas print as they stream; every other line starts on its own.
        if mid_line && !matches!(ev, RunEvent::TextDelta { .. }) {
            println!();
            mid_line = false;
        }
        match ev {
            RunEvent::StepStarted {
                step, agent_path, ..
            } => println!("[{agent_path}] step {step}"),
            RunEvent::TextDelta {
                text, agent_path, ..
            } => {
                if !mid_line {
                    print!("[{agent_path}] model: ");
                    mid_line = true;
                }
                print!("{text}");
                out.flush().ok();
            }
            // Every call, after BeforeTool hooks, with the input they left (a blocked call too).
            RunEvent::ToolStarted {
                name,
                input,
                agent_path,
                ..
            } => println!("[{agent_path}] -> {name} {input}"),
            RunEvent::ToolFinished {
                result, agent_path, ..
            } => {
                let tag = if result.is_error { "error" } else { "ok" };
                println!(
                    "[{agent_path}] <- {} {tag}: {}",
                    result.name, result.content
                );
            }
            RunEvent::StatePatch {
                patch, agent_path, ..
            } => println!("[{agent_path}] state {patch}"),
            _ => {}
        }
    }
    if mid_line {
        println!();
    }

    // The typed result: output, state, steps, usage and why it stopped.
    let result = run.result().await?;
    println!();
    println!("output:   {}", result.output.as_deref().unwrap_or("(none)"));
    println!("visited:  {:?}", result.state.visited);
    for b in &result.state.bookings {
        println!("booked:   {} nights at {}, {}", b.nights, b.hotel, b.city);
    }
    println!(
        "steps:    {} ({} model calls)",
        result.steps, result.model_calls
    );
    println!(
        "usage:    {} tokens ({} in, {} out; sub-agents excluded)",
        result.usage.total(),
        result.usage.input_tokens,
        result.usage.output_tokens
    );
    println!("stopped:  {}", result.stop);

    println!();
    println!("audit log (a runtime hook):");
    for line in audit.lines() {
        println!("  {line}");
    }
    Ok(())
}
