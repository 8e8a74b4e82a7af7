//! Faults injected by a real third-party server (aimock), through full agent runs, over each of
//! the three protocols: rate limits with `Retry-After`, server errors, requests that must not be
//! retried, errors that say what to do (bad key, unknown model, context too long), a stream cut
//! in the middle, a body that is not a stream, a dropped connection, a read timeout,
//! cancellation, and keys kept out of everything a user can print.

use crate::aimock::{Aimock, quick_retries, weather_agent};
use agentry::Model;
use agentry::prelude::*;
use agentry::{ModelError, ModelErrorKind};
use agentry_models::{Anthropic, OpenAi, OpenAiResponses, RetryPolicy};
use futures::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The three protocols.
#[derive(Clone, Copy, Debug)]
enum Protocol {
    Chat,
    Responses,
    Messages,
}

const ALL: [Protocol; 3] = [Protocol::Chat, Protocol::Responses, Protocol::Messages];

/// What the clients of one test differ in.
struct Settings<'a> {
    model: &'a str,
    key: &'a str,
    retry: RetryPolicy,
    read_timeout: Duration,
}

impl Default for Settings<'_> {
    fn default() -> Self {
        Settings {
            model: "test-model",
            key: "sk-test",
            retry: RetryPolicy::none(),
            read_timeout: Duration::from_secs(30),
        }
    }
}

impl Protocol {
    /// The weather agent on a client of this protocol for `server`.
    fn agent(self, server: &Aimock, settings: Settings) -> Agent {
        weather_agent(self.client(server, settings)).0
    }

    /// A client of this protocol for `server`.
    fn client(self, server: &Aimock, settings: Settings) -> Arc<dyn Model> {
        let Settings {
            model,
            key,
            retry,
            read_timeout,
        } = settings;
        match self {
            Protocol::Chat => Arc::new(
                OpenAi::builder(model)
                    .base_url(server.openai_base())
                    .api_key(key)
                    .retry(retry)
                    .read_timeout(read_timeout)
                    .build()
                    .unwrap(),
            ),
            Protocol::Responses => Arc::new(
                OpenAiResponses::builder(model)
                    .base_url(server.openai_base())
                    .api_key(key)
                    .retry(retry)
                    .read_timeout(read_timeout)
                    .build()
                    .unwrap(),
            ),
            Protocol::Messages => Arc::new(
                Anthropic::builder(model)
                    .base_url(&server.url)
                    .api_key(key)
                    .retry(retry)
                    .read_timeout(read_timeout)
                    .build()
                    .unwrap(),
            ),
        }
    }

    /// The Debug text of a client of this protocol with `key`.
    fn debug_of(self, server: &Aimock, key: &str) -> String {
        match self {
            Protocol::Chat => {
                format!(
                    "{:?}",
                    OpenAi::builder("m")
                        .base_url(server.openai_base())
                        .api_key(key)
                ) + &format!(
                    "{:?}",
                    OpenAi::builder("m")
                        .base_url(server.openai_base())
                        .api_key(key)
                        .build()
                )
            }
            Protocol::Responses => format!(
                "{:?}",
                OpenAiResponses::builder("m")
                    .base_url(server.openai_base())
                    .api_key(key)
                    .build()
            ),
            Protocol::Messages => format!(
                "{:?}",
                Anthropic::builder("m")
                    .base_url(&server.url)
                    .api_key(key)
                    .build()
            ),
        }
    }

    fn provider(self) -> &'static str {
        match self {
            Protocol::Chat => "openai:",
            Protocol::Responses => "openai-responses:",
            Protocol::Messages => "anthropic:",
        }
    }

    fn key_var(self) -> &'static str {
        match self {
            Protocol::Messages => "ANTHROPIC_API_KEY",
            _ => "OPENAI_API_KEY",
        }
    }

    fn base_var(self) -> &'static str {
        match self {
            Protocol::Messages => "ANTHROPIC_BASE_URL",
            _ => "OPENAI_BASE_URL",
        }
    }
}

/// Runs the weather agent with `input` on a fresh server over `protocol`; returns the result
/// and the number of model requests the server received.
async fn run(
    protocol: Protocol,
    input: &str,
    retry: RetryPolicy,
) -> (Result<RunOutput<(), String>, Error>, usize) {
    let server = Aimock::start().await;
    let agent = protocol.agent(
        &server,
        Settings {
            retry,
            ..Settings::default()
        },
    );
    let result = Runtime::new().run(&agent, input).await;
    let requests = server.journal().await.len();
    (result, requests)
}

/// The model error a run failed with.
fn model_error(protocol: Protocol, result: Result<RunOutput<(), String>, Error>) -> ModelError {
    match result {
        Err(Error::Model(error)) => {
            assert!(
                error.model.starts_with(protocol.provider()),
                "{protocol:?}: the error should name the provider: {error}"
            );
            error
        }
        other => panic!("{protocol:?}: expected a model error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_429_is_retried_after_the_wait_the_server_asks_for() {
    for protocol in ALL {
        let started = Instant::now();
        let (result, requests) = run(protocol, "busy", RetryPolicy::default()).await;
        let out = result.unwrap_or_else(|e| panic!("{protocol:?}: {e}"));
        assert_eq!(out.text, "Served after waiting.", "{protocol:?}");
        assert_eq!(requests, 2, "{protocol:?}");
        // The fixture sends `Retry-After: 1`; the computed backoff would start at 0.25–0.5 s.
        assert!(
            started.elapsed() >= Duration::from_millis(950),
            "{protocol:?}: retried after {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_500_is_retried_with_backoff() {
    for protocol in ALL {
        let (result, requests) = run(protocol, "flaky", quick_retries(3)).await;
        let out = result.unwrap_or_else(|e| panic!("{protocol:?}: {e}"));
        assert_eq!(out.text, "Served after a retry.");
        assert_eq!(requests, 2, "{protocol:?}");
    }
}

#[tokio::test]
async fn a_lasting_503_fails_the_run_when_the_retries_are_spent() {
    for protocol in ALL {
        let (result, requests) = run(protocol, "always down", quick_retries(2)).await;
        assert_eq!(requests, 3, "{protocol:?}: one attempt and two retries");
        let error = model_error(protocol, result);
        assert_eq!(error.kind, ModelErrorKind::Server);
        assert!(error.message.contains("HTTP 503"), "{error}");
        assert!(error.message.contains("service unavailable"), "{error}");
        assert!(error.message.contains("after 3 attempts"), "{error}");
        assert!(error.message.contains("max_retries"), "{error}");
    }
}

#[tokio::test]
async fn a_400_is_not_retried_and_shows_the_providers_message() {
    for protocol in ALL {
        let (result, requests) = run(protocol, "bad parameters", quick_retries(3)).await;
        assert_eq!(requests, 1, "{protocol:?}");
        let error = model_error(protocol, result);
        assert_eq!(error.kind, ModelErrorKind::InvalidRequest);
        assert!(
            error.message.contains("temperature must be at most 2"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_context_overflow_says_to_shorten_or_compact() {
    for protocol in ALL {
        let (result, requests) = run(protocol, "huge", quick_retries(3)).await;
        assert_eq!(requests, 1, "{protocol:?}");
        let error = model_error(protocol, result);
        assert_eq!(error.kind, ModelErrorKind::ContextTooLong);
        assert!(error.message.contains("maximum context length"), "{error}");
        assert!(error.message.contains("compact the history"), "{error}");
    }
}

#[tokio::test]
async fn an_unknown_model_names_the_model_and_the_base_url_setting() {
    for protocol in ALL {
        let server = Aimock::start().await;
        let settings = Settings {
            model: "no-such-model",
            retry: quick_retries(3),
            ..Settings::default()
        };
        let agent = protocol.agent(&server, settings);
        let result = Runtime::new().run(&agent, "hello").await;
        let error = model_error(protocol, result);
        assert_eq!(error.kind, ModelErrorKind::InvalidRequest);
        assert!(error.model.ends_with("no-such-model"), "{error}");
        assert!(error.message.contains("HTTP 404"), "{error}");
        assert!(error.message.contains("does not exist"), "{error}");
        assert!(error.message.contains(protocol.base_var()), "{error}");
        assert_eq!(server.journal().await.len(), 1);
    }
}

#[tokio::test]
async fn a_rejected_key_says_which_setting_to_fix_and_never_shows_the_key() {
    for protocol in ALL {
        let server = Aimock::start_with_env(&[("AIMOCK_API_KEYS", "sk-right")]).await;
        let wrong = "sk-wrong-0123456789";
        let settings = Settings {
            key: wrong,
            retry: quick_retries(3),
            ..Settings::default()
        };
        assert!(
            !protocol.debug_of(&server, wrong).contains(wrong),
            "Debug shows the key"
        );
        let agent = protocol.agent(&server, settings);
        let mut handle = Runtime::new().run(&agent, "hello").start();
        let events: Vec<String> = handle.events().map(|e| format!("{e:?}")).collect().await;
        let error = model_error(protocol, handle.result().await);
        assert_eq!(error.kind, ModelErrorKind::Auth);
        assert!(error.message.contains("HTTP 401"), "{error}");
        assert!(error.message.contains(protocol.key_var()), "{error}");
        assert!(
            !error.to_string().contains(wrong),
            "the error shows the key"
        );
        assert!(
            events.iter().all(|e| !e.contains(wrong)),
            "an event shows the key"
        );
    }
}

#[tokio::test]
async fn a_stream_cut_in_the_middle_says_what_had_arrived() {
    for protocol in ALL {
        let (result, requests) = run(protocol, "cut short", quick_retries(3)).await;
        assert_eq!(requests, 1, "{protocol:?}: streamed output is not retried");
        let error = model_error(protocol, result);
        assert_eq!(error.kind, ModelErrorKind::Stream, "{error}");
        assert!(error.message.contains("ended the turn early"), "{error}");
        assert!(error.message.contains("characters of text"), "{error}");
        assert!(error.message.contains("not retried"), "{error}");
    }
}

#[tokio::test]
async fn a_body_that_is_not_an_event_stream_is_shown_not_guessed_at() {
    for protocol in ALL {
        let (result, _) = run(protocol, "garbled", RetryPolicy::none()).await;
        let error = model_error(protocol, result);
        assert_eq!(error.kind, ModelErrorKind::Stream);
        assert!(
            error
                .message
                .contains("instead of a stream of server-sent events"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_connection_dropped_before_any_output_is_retried() {
    for protocol in ALL {
        let (result, requests) = run(protocol, "dropped", quick_retries(3)).await;
        let out = result.unwrap_or_else(|e| panic!("{protocol:?}: {e}"));
        assert_eq!(out.text, "Served after the connection dropped.");
        assert!(requests >= 2, "{protocol:?}: {requests} requests");
    }
}

#[tokio::test]
async fn a_silent_server_hits_the_read_timeout() {
    for protocol in ALL {
        let server = Aimock::start().await;
        let settings = Settings {
            read_timeout: Duration::from_millis(100),
            ..Settings::default()
        };
        let agent = protocol.agent(&server, settings);
        let started = Instant::now();
        let result = Runtime::new().run(&agent, "slowly").await;
        let error = model_error(protocol, result);
        assert_eq!(error.kind, ModelErrorKind::Timeout, "{error}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

#[tokio::test]
async fn cancelling_a_run_aborts_the_streaming_request() {
    for protocol in ALL {
        let server = Aimock::start().await;
        let agent = protocol.agent(&server, Settings::default());
        let mut handle = Runtime::new().run(&agent, "slowly").start();
        loop {
            match handle.events().next().await {
                Some(RunEvent::TextDelta { .. }) => break,
                Some(_) => {}
                None => panic!("{protocol:?}: the run ended before streaming"),
            }
        }
        let cancelled_at = Instant::now();
        handle.cancel();
        let out: RunOutput<(), String> = handle.result().await.unwrap();
        assert_eq!(out.stop, StopReason::Cancelled);
        // The whole answer takes more than ten seconds to stream.
        assert!(cancelled_at.elapsed() < Duration::from_secs(1));
    }
}
