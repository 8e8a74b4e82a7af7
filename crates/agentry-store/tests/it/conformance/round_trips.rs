//! Any history round-trips: messages of every kind, with parts of every kind (text of any
//! Unicode, images, files and audio as bytes or URLs, named or not), tool calls with arguments
//! as the model sent them (malformed too), reasoning with signatures, tool results marked as
//! errors or mocks; saved over two checkpoints and read back by another handle, equal.

use super::{Stores, save, snapshot};
use agentry_core::content::{Media, Part};
use agentry_core::{Content, Message, ThinkingBlock, ToolCall, ToolResult};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::sync::atomic::{AtomicUsize, Ordering};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 .,'\"\\\\{}]{0,24}",
        any::<String>(),
        Just("ünïcødé ✓ 🦀 \u{200b}".to_owned()),
    ]
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..600)
}

fn name() -> impl Strategy<Value = Option<String>> {
    prop::option::of("[a-z]{1,8}\\.(pdf|txt|png|wav)")
}

fn media(media_type: &'static str) -> impl Strategy<Value = Media> {
    let bytes = (bytes(), name()).prop_map(move |(b, n)| with_name(Media::bytes(b, media_type), n));
    let url = ("https://example\\.com/[a-z]{1,10}", name())
        .prop_map(move |(u, n)| with_name(Media::url(u, media_type), n));
    prop_oneof![bytes, url]
}

fn with_name(media: Media, name: Option<String>) -> Media {
    match name {
        Some(n) => media.named(n),
        None => media,
    }
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        3 => text().prop_map(Part::Text),
        1 => media("image/png").prop_map(Part::Image),
        1 => media("application/pdf").prop_map(Part::File),
        1 => media("text/plain").prop_map(Part::File),
        1 => media("audio/wav").prop_map(Part::Audio),
    ]
}

fn content() -> impl Strategy<Value = Content> {
    prop::collection::vec(part(), 0..4).prop_map(Content::from)
}

fn call() -> impl Strategy<Value = ToolCall> {
    let arguments = prop_oneof![
        Just("{}".to_owned()),
        text().prop_map(|t| serde_json::json!({"text": t, "n": 1.5}).to_string()),
        // As a model may send them: not JSON.
        text(),
    ];
    ("[a-z0-9_]{1,12}", "[a-z_]{1,10}", arguments).prop_map(|(id, name, arguments)| ToolCall {
        id,
        name,
        arguments,
    })
}

fn thinking() -> impl Strategy<Value = Option<ThinkingBlock>> {
    prop::option::of((text(), prop::option::of("[A-Za-z0-9+/=]{1,40}")).prop_map(
        |(text, signature)| ThinkingBlock {
            text,
            signature,
            replay: None,
        },
    ))
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        text().prop_map(|content| Message::System { content }),
        content().prop_map(|content| Message::User { content }),
        (content(), prop::collection::vec(call(), 0..3), thinking()).prop_map(
            |(content, tool_calls, thinking)| Message::Assistant {
                content,
                tool_calls,
                thinking,
            }
        ),
        (
            "[a-z0-9_]{1,12}",
            "[a-z_]{1,10}",
            content(),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(call_id, name, content, is_error, mocked)| {
                let mut result = ToolResult::ok(call_id, name, content);
                result.is_error = is_error;
                result.mocked = mocked;
                Message::Tool(result)
            }),
    ]
}

/// Any history, saved as two checkpoints (the second appending the rest), reads back equal.
pub async fn any_history_round_trips(s: &Stores) {
    let runs = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let histories = (
        prop::collection::vec(message(), 1..8),
        any::<prop::sample::Index>(),
    );
    let handle = tokio::runtime::Handle::current();
    let outcome = runner.run(&histories, |(messages, split)| {
        let run_id = format!("any-{}", runs.fetch_add(1, Ordering::SeqCst));
        let first = split.index(messages.len()) + 1;
        let read = tokio::task::block_in_place(|| {
            handle.block_on(async {
                let mut run = snapshot(&run_id);
                run.messages.extend(messages[..first].iter().cloned());
                save(&*s.store, &run, 0, &[]).await?;
                run.messages.extend(messages[first..].iter().cloned());
                run.step = 1;
                save(&*s.store, &run, 0, &[]).await?;
                let stored = s.other.load(&run_id).await?;
                Ok::<_, agentry_core::StoreError>(stored.map(|s| s.snapshot))
            })
        });
        let read = read
            .map_err(|e| TestCaseError::fail(format!("the store refused it: {e}")))?
            .ok_or_else(|| TestCaseError::fail("the run is not there"))?;
        let back: Vec<&Message> = read.messages.iter().collect();
        let given: Vec<&Message> = messages.iter().collect();
        prop_assert_eq!(back, given);
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}
