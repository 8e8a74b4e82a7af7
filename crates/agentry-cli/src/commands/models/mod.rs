//! `agentry models list|fetch|bench`.

mod bench;

use super::{Failure, failed};
use crate::cli::{Cli, ModelsCommand};
use crate::exit::Exit;
use crate::progress::Progress;
use agentry_local::{CATALOG, CatalogModel, DEFAULT_MODEL, FetchProgress, Fetcher, ModelCache};
use serde_json::json;

/// `agentry models ...`.
pub(super) async fn models(cli: &Cli, command: &ModelsCommand) -> Result<Exit, Failure> {
    let cache = ModelCache::from_env();
    match command {
        ModelsCommand::List => {
            for model in CATALOG {
                let path = cache.path(model);
                let cached = path.is_file();
                if cli.json {
                    outln!(
                        "{}",
                        json!({
                            "id": model.id, "title": model.title, "default": model.id == DEFAULT_MODEL.id,
                            "cached": cached, "path": path,
                        })
                    );
                } else {
                    outln!(
                        "{:<22} {:<40} {}{}",
                        model.id,
                        model.title,
                        if cached { "cached" } else { "not fetched" },
                        if model.id == DEFAULT_MODEL.id {
                            " (default)"
                        } else {
                            ""
                        }
                    );
                }
            }
            Ok(Exit::Ok)
        }
        ModelsCommand::Fetch { model } => {
            let model = match model {
                Some(id) => CatalogModel::find(id).map_err(|e| (Exit::Usage, e.to_string()))?,
                None => DEFAULT_MODEL,
            };
            let mut progress: Option<Progress> = None;
            let label = format!("fetching {} ({})", model.id, model.title);
            let path = Fetcher::new(cache)
                .fetch(&model, |p| {
                    if let FetchProgress::Downloading { bytes, total, .. } = p {
                        progress
                            .get_or_insert_with(|| Progress::bytes(label.clone(), cli.json))
                            .update(bytes, total);
                    }
                })
                .await
                .map_err(|e| failed(e.to_string()))?;
            if let Some(progress) = progress {
                progress.finish("fetched; sha256 checked");
            }
            if cli.json {
                outln!("{}", json!({"id": model.id, "path": path}));
            } else {
                outln!("{} is in the cache: {}", model.id, path.display());
            }
            Ok(Exit::Ok)
        }
        ModelsCommand::Bench(args) => bench::bench(cli, args, &cache).await,
    }
}
