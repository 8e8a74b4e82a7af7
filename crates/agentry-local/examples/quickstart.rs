//! Quick start: an agent with a tool, on the embedded local model, with no API key.
//!
//! ```sh
//! cargo run -p agentry-local --example quickstart
//! cargo run -p agentry-local --example quickstart -- "Is it warmer in Porto or in Oslo?"
//! AGENTRY_MODEL=openai:gpt-4.1-mini cargo run -p agentry-local --example quickstart
//! ```
//!
//! The first run fetches the default model (Qwen2.5-Coder-1.5B-Instruct, 1.1 GB, checked against
//! its pinned sha256) into the model cache; later runs load it from there. `AGENTRY_MODEL` picks
//! another model: `local:smollm2-135m`, `local:/path/to/model.gguf`, or a hosted provider's
//! `provider:model` (with its API key in the environment).
//!
//! It shows: a typed tool whose input schema the model sees, typed state the tool updates, a
//! hook that logs every tool call, and the run's event stream (text as it is generated, tool
//! calls and results), then the typed result.

use agentry::prelude::*;
use agentry::{Json, Model};
use agentry_local::{FetchProgress, Fetcher, LoadedChoice, ModelCache, ModelChoice, ProgressLine};
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

/// The input of `get_weather`.
#[derive(Deserialize, JsonSchema)]
struct City {
    /// The city, e.g. "Lisbon".
    city: String,
}

/// What `get_weather` returns.
#[derive(Serialize)]
struct Forecast {
    city: String,
    sky: &'static str,
    high_c: i32,
}

/// The run's state: the cities looked up.
#[derive(Default, Clone, Debug, Serialize, Deserialize)]
struct Lookups {
    cities: Vec<String>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let question = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let question = if question.is_empty() {
        "What is the weather like in Lisbon today?".to_owned()
    } else {
        question
    };

    let model = load_model().await?;

    let get_weather = tool(
        "get_weather",
        "Today's weather forecast for a city",
        |a: City, ctx: ToolCtx| async move {
            let (sky, high_c) = match a.city.to_lowercase().as_str() {
                "lisbon" => ("sunny", 24),
                "porto" => ("light rain", 17),
                "oslo" => ("snow", -3),
                _ => ("cloudy", 15),
            };
            ctx.update_state(|s: &mut Lookups| s.cities.push(a.city.clone()))?;
            Ok(Json(Forecast {
                city: a.city,
                sky,
                high_c,
            }))
        },
    );

    let agent = Agent::builder("weather")
        .instructions(
            "You answer questions about the weather. Call get_weather for each city you need, \
             then answer in one or two sentences using the forecast.",
        )
        .model(model)
        .tool(get_weather)
        .state(Lookups::default())
        .max_steps(6)
        // A hook: every tool call passes through it before the tool runs.
        .with(on::before_tool(|ev, _ctx| async move {
            eprintln!("[hook] before_tool {} {}", ev.name(), ev.input);
            Ok(ev)
        }))
        .build()?;

    println!("user: {question}");
    let started = Instant::now();
    let mut run = Runtime::new().run(&agent, question.as_str()).start();
    let mut mid_line = false;
    while let Some(event) = run.events().next().await {
        if mid_line && !matches!(event, RunEvent::TextDelta { .. }) {
            println!();
            mid_line = false;
        }
        match event {
            RunEvent::StepStarted { step, .. } => println!("-- step {step}"),
            RunEvent::TextDelta { text, .. } => {
                if !mid_line {
                    print!("model: ");
                    mid_line = true;
                }
                print!("{text}");
                std::io::stdout().flush().ok();
            }
            RunEvent::ToolStarted { name, input, .. } => println!("-> {name} {input}"),
            RunEvent::ToolFinished { result, .. } => {
                println!("<- {}: {}", result.name, result.content)
            }
            _ => {}
        }
    }
    if mid_line {
        println!();
    }
    let result = run.result().await?;
    println!();
    println!("answer:  {}", result.output.as_deref().unwrap_or("(none)"));
    println!("looked up: {:?}", result.state.cities);
    println!(
        "{} steps, {} tokens ({} in, {} out), {:.1} s, stopped: {}",
        result.steps,
        result.usage.total(),
        result.usage.input_tokens,
        result.usage.output_tokens,
        started.elapsed().as_secs_f64(),
        result.stop
    );
    Ok(())
}

/// The model `AGENTRY_MODEL` names (the local default when unset), fetched into the cache
/// first if it is a catalog model not there yet, loaded with progress on stderr; a hosted
/// provider's spec is built by agentry-models.
async fn load_model() -> Result<Arc<dyn Model>, Box<dyn std::error::Error>> {
    let choice = ModelChoice::from_env()?;
    if let ModelChoice::Catalog(model) = &choice {
        let mut line = ProgressLine::new(format!("fetching {} once", model.title));
        Fetcher::new(ModelCache::from_env())
            .fetch(model, |p| match p {
                FetchProgress::Downloading { bytes, total, .. } => line.update(bytes, total),
                FetchProgress::Done { path } => {
                    line.finish(&format!("fetched and verified: {}", path.display()))
                }
                _ => {}
            })
            .await?;
    }
    let started = Instant::now();
    let mut line = ProgressLine::new(format!("loading {choice}"));
    let model: Arc<dyn Model> = match choice.load(move |p| line.update(p.bytes, p.total)).await? {
        LoadedChoice::Local(model) => Arc::new(model),
        LoadedChoice::Hosted(spec) => agentry_models::from_spec(&spec)?,
    };
    ProgressLine::new("").finish(&format!(
        "loaded {} in {:.1} s",
        model.name(),
        started.elapsed().as_secs_f64()
    ));
    Ok(model)
}
