//! Images, documents and audio as each door's clients send them, made agentry parts: OpenAI
//! Chat Completions (`image_url`, `input_audio`, `file`), Responses (`input_image`,
//! `input_file`), the AI SDK's UI messages (`file` with `mediaType` and `url`), AG-UI (`binary`)
//! and A2A (`file` parts, 1.0 and 0.3). Bytes come as base64 or `data:` URLs; other URLs stay
//! URLs for the model's provider to fetch.

use agentry::Content;
use agentry::content::{Media, Part, media_type_by_name};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;

/// The media parts of `content` (an array of a client's content parts; anything else has
/// none), in order; an error naming the part whose bytes cannot be read.
pub(crate) fn media_parts(content: &Value) -> Result<Vec<Part>, String> {
    let Some(parts) = content.as_array() else {
        return Ok(Vec::new());
    };
    let mut media = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if let Some(part) = part(p).map_err(|e| format!("content part {i}: {e}"))? {
            media.push(part);
        }
    }
    Ok(media)
}

/// A run's input: `media`, then `text` (when there is any).
pub(crate) fn with_media(media: Vec<Part>, text: String) -> Content {
    let mut content = Content::from(media);
    if !text.trim().is_empty() {
        content.push(text);
    }
    content
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(*k))?.as_str()
}

/// One part, or `None` for text and what is not media.
fn part(p: &Value) -> Result<Option<Part>, String> {
    let kind = p["type"]
        .as_str()
        .or_else(|| p["kind"].as_str())
        .unwrap_or("");
    let name = |keys: &[&[&str]]| keys.iter().find_map(|k| str_at(p, k)).map(str::to_owned);
    let found = match kind {
        "image_url" => from_url(str_at(p, &["image_url", "url"]), None, None)?,
        "input_image" => from_url(p["image_url"].as_str(), None, None)?,
        "input_audio" => {
            let format = str_at(p, &["input_audio", "format"]).unwrap_or("wav");
            let media_type = if format == "mp3" {
                "audio/mpeg"
            } else {
                "audio/wav"
            };
            from_base64(str_at(p, &["input_audio", "data"]), media_type, None)?
        }
        // OpenAI Chat Completions: `{"type": "file", "file": {"file_data", "filename"}}`.
        "file" if p["file"].is_object() && p["file"].get("file_data").is_some() => from_url(
            str_at(p, &["file", "file_data"]),
            None,
            name(&[&["file", "filename"]]),
        )?,
        // The AI SDK's UI messages: `{"type": "file", "mediaType", "url", "filename"}`.
        "file" if p.get("url").is_some() => from_url(
            p["url"].as_str(),
            p["mediaType"].as_str(),
            name(&[&["filename"]]),
        )?,
        "input_file" => match p["file_data"].as_str() {
            Some(data) => from_url(Some(data), None, name(&[&["filename"]]))?,
            None => from_url(p["file_url"].as_str(), None, name(&[&["filename"]]))?,
        },
        // AG-UI: `{"type": "binary", "mimeType", "data" | "url", "filename"}`.
        "binary" => {
            let media_type = p["mimeType"].as_str().unwrap_or("application/octet-stream");
            match p["data"].as_str() {
                Some(data) => from_base64(Some(data), media_type, name(&[&["filename"]]))?,
                None => from_url(p["url"].as_str(), Some(media_type), name(&[&["filename"]]))?,
            }
        }
        // A2A 1.0: `{"raw": base64 | "url": .., "mediaType", "filename"}`.
        "" if p["raw"].is_string() => from_base64(
            p["raw"].as_str(),
            p["mediaType"]
                .as_str()
                .unwrap_or("application/octet-stream"),
            name(&[&["filename"]]),
        )?,
        "" if p["url"].is_string() => from_url(
            p["url"].as_str(),
            p["mediaType"].as_str(),
            name(&[&["filename"]]),
        )?,
        // A2A: a part with a `file` (0.3: `kind: "file"`, `bytes` | `uri`, `mimeType`, `name`;
        // 1.0's drafts: `fileWithBytes` | `fileWithUri`, `mediaType`).
        _ if p["file"].is_object() => {
            let f = &p["file"];
            let media_type = f["mediaType"]
                .as_str()
                .or_else(|| f["mimeType"].as_str())
                .unwrap_or("application/octet-stream");
            let name = f["name"].as_str().map(str::to_owned);
            match f["fileWithBytes"].as_str().or_else(|| f["bytes"].as_str()) {
                Some(bytes) => from_base64(Some(bytes), media_type, name)?,
                None => from_url(
                    f["fileWithUri"].as_str().or_else(|| f["uri"].as_str()),
                    Some(media_type),
                    name,
                )?,
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(found))
}

/// A part from a URL: a `data:` URL's bytes, or the URL itself.
fn from_url(
    url: Option<&str>,
    media_type: Option<&str>,
    name: Option<String>,
) -> Result<Part, String> {
    let url = url.ok_or("it names no URL or data")?;
    if let Some(rest) = url.strip_prefix("data:") {
        let (meta, data) = rest
            .split_once(',')
            .ok_or("its `data:` URL has no `,` before the data")?;
        let (given, base64) = match meta.strip_suffix(";base64") {
            Some(t) => (t, true),
            None => (meta, false),
        };
        if !base64 {
            return Err("its `data:` URL is not base64".into());
        }
        let media_type = media_type.filter(|t| !t.is_empty()).unwrap_or(given);
        return from_base64(Some(data), media_type, name);
    }
    let media_type = media_type
        .map(str::to_owned)
        .or_else(|| media_type_by_name(url).map(str::to_owned))
        .unwrap_or_else(|| "application/octet-stream".into());
    Ok(kind_of(Media::url(url, media_type), name))
}

fn from_base64(data: Option<&str>, media_type: &str, name: Option<String>) -> Result<Part, String> {
    let bytes = BASE64
        .decode(data.ok_or("it has no data")?)
        .map_err(|e| format!("its data is not base64: {e}"))?;
    let media_type = match media_type {
        "" | "application/octet-stream" => agentry::content::media_type_of(&bytes, name.as_deref()),
        given => given,
    };
    Ok(kind_of(Media::bytes(bytes, media_type.to_owned()), name))
}

/// An image, audio or file part, by the media type.
fn kind_of(mut media: Media, name: Option<String>) -> Part {
    media.name = name;
    Part::of_media(media)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PNG: &str = "iVBORw0KGgo=";

    #[test]
    fn every_doors_shapes_become_parts() {
        let data_url = format!("data:image/png;base64,{PNG}");
        let parts = json!([
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": data_url}},
            {"type": "input_image", "image_url": "https://example.com/a.jpg", "detail": "auto"},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
            {"type": "input_file", "file_url": "https://example.com/b.pdf"},
            {"type": "file", "mediaType": "image/png", "url": data_url, "filename": "shot.png"},
            {"type": "binary", "mimeType": "image/png", "data": PNG},
            {"file": {"fileWithBytes": PNG, "mediaType": "image/png", "name": "x.png"}},
            {"kind": "file", "file": {"uri": "https://example.com/c.png", "mimeType": "image/png"}},
        ]);
        let media = media_parts(&parts).unwrap();
        let kinds: Vec<&str> = media.iter().map(|p| p.kind().as_str()).collect();
        assert_eq!(
            kinds,
            [
                "image", "image", "audio", "file", "file", "image", "image", "image", "image"
            ]
        );
        assert_eq!(
            media[0].media().unwrap().data(),
            Some(&b"\x89PNG\r\n\x1a\n"[..])
        );
        assert_eq!(media[1].media().unwrap().media_type, "image/jpeg");
        assert_eq!(media[3].media().unwrap().name.as_deref(), Some("a.pdf"));
        assert_eq!(media[5].media().unwrap().name.as_deref(), Some("shot.png"));
        assert!(media_parts(&json!("just text")).unwrap().is_empty());
    }

    #[test]
    fn unreadable_bytes_are_an_error_naming_the_part() {
        let e = media_parts(&json!([{"type": "text", "text": "x"}, {"type": "binary", "mimeType": "image/png", "data": "%%"}]))
            .unwrap_err();
        assert!(
            e.starts_with("content part 1: its data is not base64"),
            "{e}"
        );
        let e = media_parts(
            &json!([{"type": "image_url", "image_url": {"url": "data:image/png,raw"}}]),
        )
        .unwrap_err();
        assert!(e.contains("not base64"), "{e}");
    }
}
