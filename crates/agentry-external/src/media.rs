//! Media parts in hook payloads. A command hook gets an image, a document or audio by
//! reference: the bytes are written once to the state directory's `media/<sha256>.<ext>` and
//! the part carries `sha256`, `size` and `path` instead of megabytes of base64 on its stdin
//! (unless [`CommandHooks::inline_media`](crate::CommandHooks::inline_media) asks for them).
//! What a hook answers may hold parts again: by `path` (a file it wrote, such as an image with
//! its EXIF stripped), by `sha256` (a part it was given), by `url`, or as base64 `data`.

use agentry_core::content::{Blob, BlobDigest, Part, extension_of, media_type_by_name};
use agentry_core::{Content, content::Media};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

const MEDIA_KINDS: [&str; 3] = ["image", "file", "audio"];

/// Replaces the inline bytes of every media part in `payload` with a reference to a file in
/// `dir` holding them (written once per content). A part whose bytes cannot be written keeps
/// them inline, and the failure is logged.
pub(crate) fn externalize(payload: &mut Value, dir: &Path) {
    match payload {
        Value::Object(map) => {
            if is_inline_media(map) {
                if let Err(e) = reference(map, dir) {
                    tracing::warn!(dir = %dir.display(), error = %e, "a media part could not be written for hooks; it is sent inline");
                }
                return;
            }
            map.values_mut().for_each(|v| externalize(v, dir));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| externalize(v, dir)),
        _ => {}
    }
}

fn is_inline_media(map: &Map<String, Value>) -> bool {
    map.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| MEDIA_KINDS.contains(&t))
        && map.get("data").is_some_and(Value::is_string)
        && map.contains_key("media_type")
}

fn reference(map: &mut Map<String, Value>, dir: &Path) -> std::io::Result<()> {
    let data = map.get("data").and_then(Value::as_str).unwrap_or_default();
    let bytes = BASE64
        .decode(data)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let digest = BlobDigest::of(&bytes);
    let media_type = map.get("media_type").and_then(Value::as_str).unwrap_or("");
    let path = dir.join(file_name(&digest, media_type));
    if !path.exists() {
        std::fs::create_dir_all(dir)?;
        // Written under a temporary name and renamed: a reader never sees half a file.
        let partial = dir.join(format!(".{digest}.{}.partial", std::process::id()));
        std::fs::write(&partial, &bytes)?;
        std::fs::rename(&partial, &path)?;
    }
    map.remove("data");
    map.insert("sha256".into(), digest.to_string().into());
    map.insert("size".into(), (bytes.len() as u64).into());
    map.insert("path".into(), path.to_string_lossy().into_owned().into());
    Ok(())
}

/// `<sha256>.<ext>`, the extension from the media type, so tools that go by it (image
/// viewers, `file`-less scripts) read the file right.
fn file_name(digest: &BlobDigest, media_type: &str) -> String {
    format!("{digest}.{}", extension_of(media_type).unwrap_or("bin"))
}

/// The content a hook answered with: a string is text; an array of parts is those parts (each
/// given by `path`, `sha256`, `url` or `data`; one given by `sha256` is the part of `before`
/// with that content, or the file at its `path`); any other JSON is its text. A part that
/// cannot be read makes the whole answer its JSON text, so nothing is silently dropped.
pub(crate) fn content_from_hook(answer: &Value, before: &Content) -> Content {
    match answer {
        Value::String(s) => Content::from(s.as_str()),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| part_from_hook(item, before))
            .collect::<Result<Content, String>>()
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "a hook answered with parts that cannot be read; the model gets the answer as JSON text");
                Content::from(answer.to_string())
            }),
        other => Content::from(other.to_string()),
    }
}

fn part_from_hook(item: &Value, before: &Content) -> Result<Part, String> {
    let Some(map) = item.as_object() else {
        return Ok(Part::Text(match item {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }));
    };
    let mut map = map.clone();
    let path = map
        .remove("path")
        .and_then(|p| p.as_str().map(PathBuf::from));
    let has_source = ["data", "url", "sha256"]
        .iter()
        .any(|k| map.contains_key(*k));
    if let (Some(path), false) = (&path, has_source) {
        let bytes = std::fs::read(path)
            .map_err(|e| format!("the part's file {} cannot be read: {e}", path.display()))?;
        if !map.contains_key("media_type") {
            let guessed = agentry_core::content::media_type_of(&bytes, path.to_str());
            map.insert("media_type".into(), guessed.into());
        }
        map.insert("data".into(), BASE64.encode(&bytes).into());
    }
    let mut part: Part = serde_json::from_value(Value::Object(map)).map_err(|e| e.to_string())?;
    if let Some(media) = part.media_mut()
        && let Some(blob) = media.blob()
        && !blob.is_loaded()
    {
        let loaded = find(blob, before, path.as_deref())?;
        *media = Media {
            source: agentry_core::content::MediaSource::Bytes(loaded),
            ..media.clone()
        };
    }
    if let Some(media) = part.media_mut()
        && media.media_type.is_empty()
    {
        media.media_type = media
            .name
            .as_deref()
            .and_then(media_type_by_name)
            .unwrap_or("application/octet-stream")
            .into();
    }
    Ok(part)
}

/// The bytes of a part a hook gave by `sha256`: the part it was given, or its `path`.
fn find(blob: &Blob, before: &Content, path: Option<&Path>) -> Result<Blob, String> {
    if let Some(given) = before
        .blobs()
        .find(|b| b.is_loaded() && b.len() == blob.len() && b.digest() == blob.digest())
    {
        return Ok(given.clone());
    }
    let path = path.ok_or_else(|| {
        format!(
            "no part with sha256 {} was given to the hook, and the answer names no `path`",
            blob.digest()
        )
    })?;
    let bytes = std::fs::read(path)
        .map_err(|e| format!("the part's file {} cannot be read: {e}", path.display()))?;
    blob.load(bytes.into()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn payload_media_go_by_reference_and_come_back() {
        let dir = std::env::temp_dir().join(format!("agentry-media-test-{}", std::process::id()));
        let image = Part::image(vec![0x89, b'P', b'N', b'G', 1, 2, 3], "image/png");
        let content = Content::from([Part::text("look"), image.clone()]);
        let mut payload = json!({"prompt": content, "nested": [{"content": content}]});
        externalize(&mut payload, &dir);
        let part = &payload["prompt"][1];
        assert!(part.get("data").is_none(), "{payload}");
        assert_eq!(part["size"], 7);
        let path = PathBuf::from(part["path"].as_str().unwrap());
        assert_eq!(
            std::fs::read(&path).unwrap(),
            image.media().unwrap().data().unwrap()
        );
        assert_eq!(payload["nested"][0]["content"][1]["path"], part["path"]);

        // Given back by reference, by path, or dropped.
        let back = content_from_hook(&payload["prompt"], &content);
        assert_eq!(back, content);
        let only_text = content_from_hook(&json!([{"type": "text", "text": "no image"}]), &content);
        assert_eq!(only_text, "no image");
        let by_path = content_from_hook(&json!([{"type": "image", "path": path}]), &Content::new());
        assert_eq!(by_path.parts()[0], image);
        let unknown = json!([{"type": "image", "media_type": "image/png", "sha256": "ab".repeat(32), "size": 3}]);
        assert!(
            content_from_hook(&unknown, &content)
                .text()
                .contains("sha256")
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
