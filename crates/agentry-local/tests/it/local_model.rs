//! The local model on a real GGUF file (SmolLM2-135M): loading, the chat template, streaming,
//! sampling limits, the context limit, prefix reuse and cancellation.

use crate::common::{ask, smollm2, weather_spec};
use agentry_core::{
    FinishReason, Message, Model, ModelErrorKind, ModelEvent, ModelRequest, ToolCall, ToolResult,
};
use agentry_local::LocalModel;
use futures::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Every event of one turn, or the error that ended it.
async fn turn(
    model: &LocalModel,
    request: &ModelRequest,
) -> Result<Vec<ModelEvent>, agentry_core::ModelError> {
    let mut stream = model.stream(request);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event?);
    }
    Ok(events)
}

fn text_of(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn usage_of(events: &[ModelEvent]) -> agentry_core::Usage {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            ModelEvent::Usage(u) => Some(*u),
            _ => None,
        })
        .expect("a turn reports its usage")
}

fn finish_of(events: &[ModelEvent]) -> FinishReason {
    match events.last() {
        Some(ModelEvent::Finish(f)) => f.clone(),
        other => panic!("a turn ends with its finish reason, not {other:?}"),
    }
}

#[tokio::test]
async fn loads_a_llama_gguf_with_its_tokenizer() {
    let model = smollm2().await;
    assert_eq!(model.architecture(), "llama");
    assert_eq!(model.name(), "local:smollm2-135m");
    // The context SmolLM2 declares.
    assert_eq!(model.context_limit(), 8192);
    let n = model.count_tokens("Hello, world! 12345");
    // Digits are split one per token by this tokenizer: at least 5 of them plus the words.
    assert!((8..=14).contains(&n), "{n} tokens");
    assert_eq!(model.count_tokens(""), 0);
    // The model sizes prompts (for compaction) with this same tokenizer.
    let counter = model
        .token_counter()
        .expect("a local model knows its tokenizer");
    assert_eq!(counter.count("Hello, world! 12345"), n);
    assert_eq!(counter.name(), "local:smollm2-135m");
}

#[tokio::test]
async fn the_chat_template_renders_system_tools_and_history() {
    let model = smollm2().await;
    let mut request = ask("What is the weather in Lisbon?");
    request.system = Some(Arc::from("You are terse."));
    request.tools = Arc::from(vec![weather_spec()]);
    request.messages.push(Message::Assistant {
        content: Default::default(),
        thinking: None,
        tool_calls: vec![ToolCall::new(
            "c1",
            "get_weather",
            &serde_json::json!({"city": "Lisbon"}),
        )],
    });
    request.messages.push(Message::Tool(ToolResult::ok(
        "c1",
        "get_weather",
        "sunny, 24 C",
    )));
    let prompt = model.render_prompt(&request).unwrap();

    assert!(
        prompt.starts_with("<|im_start|>system\nYou are terse."),
        "{prompt}"
    );
    // SmolLM2's template knows no tools: they are described in the system prompt.
    assert!(prompt.contains("<tool_call></tool_call>"), "{prompt}");
    assert!(
        prompt.contains(r#"{"type": "function", "function": {"name": "get_weather""#),
        "{prompt}"
    );
    assert!(
        prompt.contains("<|im_start|>user\nWhat is the weather in Lisbon?<|im_end|>"),
        "{prompt}"
    );
    // The earlier call is shown in the format the model is asked to use.
    assert!(
        prompt.contains("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}\n</tool_call>"),
        "{prompt}"
    );
    assert!(
        prompt.contains("<|im_start|>tool\nsunny, 24 C<|im_end|>"),
        "{prompt}"
    );
    assert!(prompt.ends_with("<|im_start|>assistant\n"), "{prompt}");
}

#[tokio::test]
async fn streams_text_in_pieces_with_usage_and_finish() {
    let model = smollm2().await;
    let mut request = ask("Name three colours.");
    request.params.max_tokens = Some(40);
    let events = turn(&model, &request).await.unwrap();
    let pieces = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::TextDelta(_)))
        .count();
    let text = text_of(&events);
    assert!(pieces > 3, "text arrives piece by piece: {events:?}");
    assert!(!text.trim().is_empty());
    assert!(
        !text.contains("<|im_end|>"),
        "control tokens are not text: {text}"
    );
    let usage = usage_of(&events);
    assert_eq!(
        usage.input_tokens as usize,
        model.count_tokens(&model.render_prompt(&request).unwrap())
    );
    assert!(usage.output_tokens >= pieces as u64 && usage.output_tokens <= 40);
    assert!(matches!(
        finish_of(&events),
        FinishReason::Stop | FinishReason::Length
    ));
}

#[tokio::test]
async fn greedy_decoding_repeats_itself_and_max_tokens_ends_with_length() {
    let model = smollm2().await;
    let mut request = ask("Write a long story about a dragon.");
    request.params.max_tokens = Some(12);
    let first = turn(&model, &request).await.unwrap();
    let second = turn(&model, &request).await.unwrap();
    assert_eq!(text_of(&first), text_of(&second));
    assert_eq!(usage_of(&first).output_tokens, 12);
    assert_eq!(finish_of(&first), FinishReason::Length);
}

#[tokio::test]
async fn a_stop_sequence_ends_the_turn_and_is_not_in_the_text() {
    let model = smollm2().await;
    let mut request = ask("Count from 1 to 10, separated by commas.");
    request.params.max_tokens = Some(40);
    let full = text_of(&turn(&model, &request).await.unwrap());
    assert!(full.contains('5'), "the model counts: {full}");
    request.params.stop = vec!["5".into()];
    let events = turn(&model, &request).await.unwrap();
    let cut = text_of(&events);
    assert!(!cut.contains('5'), "{cut}");
    assert!(full.starts_with(&cut), "{cut:?} is the start of {full:?}");
    assert_eq!(finish_of(&events), FinishReason::Stop);
}

#[tokio::test]
async fn sampling_with_temperature_follows_the_seed() {
    let model = smollm2().await;
    let mut request = ask("Invent a name for a cat.");
    request.params.max_tokens = Some(16);
    request.params.temperature = Some(1.2);
    request.params.extra.insert("seed".into(), 7.into());
    let a = text_of(&turn(&model, &request).await.unwrap());
    let b = text_of(&turn(&model, &request).await.unwrap());
    assert_eq!(a, b, "same seed, same text");
    let mut differ = false;
    for seed in [8u64, 9, 10, 11] {
        request.params.extra.insert("seed".into(), seed.into());
        differ |= text_of(&turn(&model, &request).await.unwrap()) != a;
    }
    assert!(differ, "other seeds sample other text");
}

#[tokio::test]
async fn a_prompt_longer_than_the_context_is_a_context_too_long_error() {
    let path = smollm2().await.path().to_owned();
    let small = LocalModel::builder(path)
        .context_limit(70)
        .load_async()
        .await
        .unwrap();
    // Not a multiple of anything the cache is laid out in: the limit is kept as given.
    assert_eq!(small.context_limit(), 70);
    let request = ask(&"Tell me about the sea. ".repeat(20));
    let err = turn(&small, &request).await.unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::ContextTooLong);
    assert!(err.message.contains("context holds 70"), "{}", err.message);
    assert!(err.message.contains("compact"), "{}", err.message);
    // A short prompt still fits, with its output capped by what is left of the context.
    let mut short = ask("Hi");
    short.params.max_tokens = Some(1000);
    let events = turn(&small, &short).await.unwrap();
    let usage = usage_of(&events);
    assert!(usage.input_tokens + usage.output_tokens <= 70, "{usage:?}");
}

#[tokio::test]
async fn a_conversation_that_grows_reuses_the_cached_prefix() {
    let model = smollm2().await;
    let mut request = ask("What is the capital of France?");
    request.params.max_tokens = Some(8);
    let first = turn(&model, &request).await.unwrap();
    let prompt_tokens = usage_of(&first).input_tokens;
    request.messages.push(Message::assistant(text_of(&first)));
    request.messages.push(Message::user("And of Spain?"));
    let second = turn(&model, &request).await.unwrap();
    let usage = usage_of(&second);
    assert!(
        usage.cached_input_tokens >= prompt_tokens,
        "the first turn's prompt ({prompt_tokens} tokens) is reused: {usage:?}"
    );
    assert!(usage.cached_input_tokens < usage.input_tokens);
    // An answer rendered back unlike what was generated (as a tool call is): the prompt before
    // it is still reused.
    let mut other = ask("What is the capital of France?");
    other.params.max_tokens = Some(8);
    other
        .messages
        .push(Message::assistant("Paris, which every atlas names."));
    other.messages.push(Message::user("And of Spain?"));
    let fourth = turn(&model, &other).await.unwrap();
    let usage = usage_of(&fourth);
    assert!(
        usage.cached_input_tokens >= prompt_tokens,
        "the shared start ({prompt_tokens} tokens) is reused: {usage:?}"
    );
    // An unrelated prompt reuses at most the chat template's opening.
    let third = turn(&model, &ask("Unrelated.")).await.unwrap();
    let usage = usage_of(&third);
    assert!(usage.cached_input_tokens < prompt_tokens, "{usage:?}");
    assert!(usage.cached_input_tokens < usage.input_tokens, "{usage:?}");
}

#[tokio::test]
async fn dropping_the_stream_stops_generation() {
    let model = smollm2().await;
    let mut long = ask("Write a very long essay about the history of ships.");
    long.params.max_tokens = Some(2000);
    {
        let mut stream = model.stream(&long);
        // Take two pieces, then walk away.
        stream.next().await.unwrap().unwrap();
        stream.next().await.unwrap().unwrap();
    }
    // The model is free again long before 2000 tokens could have been generated.
    let started = Instant::now();
    let mut short = ask("Hi");
    short.params.max_tokens = Some(2);
    turn(&model, &short).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_long_prompt_says_how_far_it_is_read_before_the_first_token() {
    let model = smollm2().await;
    // Over two chunks of prompt, and new to the model's cache.
    let long: String = (0..60)
        .map(|i| format!("Line {i} of a long note about apples. "))
        .collect();
    let mut request = ask(&format!("{long}\nSummarise the note in one word."));
    request.params.max_tokens = Some(40);
    let events = turn(&model, &request).await.unwrap();
    let progress: Vec<agentry_core::TurnProgress> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Progress(p) => Some(*p),
            _ => None,
        })
        .collect();
    let reading: Vec<_> = progress.iter().filter(|p| p.generated == 0).collect();
    assert!(reading.len() >= 2, "progress while reading: {progress:?}");
    let total = reading[0].prompt_tokens;
    assert!(
        reading
            .windows(2)
            .all(|w| w[0].prompt_read < w[1].prompt_read),
        "{reading:?}"
    );
    assert_eq!(reading.last().unwrap().prompt_read, total, "{reading:?}");
    let usage = usage_of(&events);
    assert!(
        u64::from(total) <= usage.input_tokens,
        "{total} of {usage:?}"
    );
    // Reading comes before any text.
    let first_text = events
        .iter()
        .position(|e| matches!(e, ModelEvent::TextDelta(_)))
        .unwrap_or(events.len());
    let last_reading = events
        .iter()
        .rposition(|e| matches!(e, ModelEvent::Progress(p) if p.generated == 0))
        .unwrap();
    assert!(last_reading < first_text);
    // While generating, the count of tokens so far goes up.
    let generated: Vec<u32> = progress
        .iter()
        .map(|p| p.generated)
        .filter(|g| *g > 0)
        .collect();
    assert!(generated.windows(2).all(|w| w[0] < w[1]), "{generated:?}");
}
