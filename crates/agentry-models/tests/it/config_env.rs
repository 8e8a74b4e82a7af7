//! Configuration from the environment, the way the official SDKs read it, against a real server
//! (aimock). Every check lives in one test: the environment is per process.

use crate::aimock::Aimock;
use agentry::prelude::*;
use agentry_models::{Anthropic, Error, OpenAi, from_spec};

fn set(name: &str, value: &str) {
    // SAFETY: this test binary runs one test, and sets variables before it starts any thread
    // that reads them (the requests below run after each set).
    unsafe { std::env::set_var(name, value) }
}

fn unset(name: &str) {
    // SAFETY: as in `set`.
    unsafe { std::env::remove_var(name) }
}

#[tokio::test]
async fn clients_read_keys_base_urls_and_headers_from_the_environment() {
    for name in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ] {
        unset(name);
    }

    // Without a key, OpenAI's own API and Anthropic's are refused up front, naming the variable.
    let err = OpenAi::from_env("gpt-4.1").unwrap_err();
    assert_eq!(
        err,
        Error::MissingApiKey {
            provider: "openai",
            var: "OPENAI_API_KEY"
        }
    );
    assert!(err.to_string().contains("set `OPENAI_API_KEY`"));
    let err = Anthropic::from_env("claude-sonnet-4-5").unwrap_err();
    assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
    let err = from_spec("mistral:large").err().unwrap();
    assert!(
        err.to_string().contains("`mistral` is not a provider"),
        "{err}"
    );

    let server =
        Aimock::start_with_env(&[("AIMOCK_API_KEYS", "sk-env-openai,sk-env-anthropic")]).await;
    set("OPENAI_API_KEY", "sk-env-openai");
    set("OPENAI_BASE_URL", &server.openai_base());
    set("OPENAI_ORG_ID", "org-env");
    set("OPENAI_PROJECT_ID", "proj-env");
    set("ANTHROPIC_API_KEY", "sk-env-anthropic");
    set("ANTHROPIC_BASE_URL", &server.url);

    for spec in [
        "openai:gpt-4.1",
        "openai-responses:o4-mini",
        "anthropic:claude-sonnet-4-5",
    ] {
        let model = from_spec(spec).unwrap();
        assert_eq!(model.name(), spec);
        let agent = Agent::builder("env").model_arc(model).build().unwrap();
        let out = Runtime::new().run(&agent, "hello").await;
        assert_eq!(out.unwrap().text, "Hello there!", "{spec}");
    }
    let journal = server.journal().await;
    let paths: Vec<&str> = journal
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["/v1/chat/completions", "/v1/responses", "/v1/messages"]
    );
    assert_eq!(journal[0]["headers"]["openai-organization"], "org-env");
    assert_eq!(journal[0]["headers"]["openai-project"], "proj-env");
}
