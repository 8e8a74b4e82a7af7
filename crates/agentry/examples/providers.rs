//! An agent with a tool on a hosted or self-hosted model, its answer streamed to the terminal.
//!
//! ```sh
//! OPENAI_API_KEY=... cargo run -p agentry --example providers -- openai:gpt-4.1-mini "What time is it in Lisbon?"
//! ANTHROPIC_API_KEY=... cargo run -p agentry --example providers -- anthropic:claude-sonnet-4-5
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run -p agentry --example providers -- openai:local
//! ```
//!
//! The first argument is a `provider:model` spec (`openai`, `openai-responses` or `anthropic`);
//! keys and base URLs come from the environment.

use agentry::prelude::*;
use std::io::Write;

/// The input of `clock`.
#[derive(Deserialize, JsonSchema)]
struct Place {
    /// A city, e.g. "Lisbon".
    city: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let spec = args.next().unwrap_or_else(|| "openai:gpt-4.1-mini".into());
    let question = args
        .next()
        .unwrap_or_else(|| "What time is it in Lisbon?".into());
    let model = agentry::models::from_spec(&spec)?;

    let clock = tool(
        "clock",
        "The local time in a city",
        |p: Place, _ctx: ToolCtx| async move { Ok(format!("It is 14:05 in {}.", p.city)) },
    );
    let agent = Agent::builder("assistant")
        .instructions("Answer briefly. Use the clock tool for times.")
        .model_arc(model)
        .tool(clock)
        .build()?;

    let mut handle = Runtime::new().run(&agent, question).start();
    while let Some(event) = handle.events().next().await {
        match event {
            RunEvent::TextDelta { text, .. } => {
                print!("{text}");
                std::io::stdout().flush()?;
            }
            RunEvent::ToolStarted { name, input, .. } => println!("\n-> {name} {input}"),
            _ => {}
        }
    }
    let out: RunOutput<(), String> = handle.result().await?;
    println!(
        "\n[{spec}: {} steps, {} tokens in, {} out]",
        out.steps, out.usage.input_tokens, out.usage.output_tokens
    );
    Ok(())
}
