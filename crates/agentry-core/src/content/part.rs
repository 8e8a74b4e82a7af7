//! One part of a message: text, an image, a file (a document) or audio.

use super::blob::{Blob, BlobDigest};
use super::media_type::{media_type_by_name, media_type_of};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::path::Path;

/// One part of a message's [`Content`](super::Content).
///
/// ```
/// use agentry_core::content::Part;
/// let photo = Part::image(b"\x89PNG\r\n\x1a\n...".to_vec(), "image/png");
/// assert_eq!(photo.kind().as_str(), "image");
/// assert_eq!(Part::from("hello").as_text(), Some("hello"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Text.
    Text(String),
    /// An image (PNG, JPEG, GIF, WebP for most providers).
    Image(Media),
    /// A file or document: a PDF, a plain-text file, or any file a provider accepts.
    File(Media),
    /// Audio (WAV, MP3, ... where a provider accepts it).
    Audio(Media),
}

/// What kind of part a [`Part`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PartKind {
    /// [`Part::Text`].
    Text,
    /// [`Part::Image`].
    Image,
    /// [`Part::File`].
    File,
    /// [`Part::Audio`].
    Audio,
}

impl PartKind {
    /// `text`, `image`, `file` or `audio`: the part's `type` in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            PartKind::Text => "text",
            PartKind::Image => "image",
            PartKind::File => "file",
            PartKind::Audio => "audio",
        }
    }
}

impl fmt::Display for PartKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The media of an image, file or audio part: its type, where its bytes are, and a file name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Media {
    /// The IANA media type (`image/png`, `application/pdf`, `audio/wav`, ...). For a URL whose
    /// type is unknown, `image/*`, `audio/*` or `application/octet-stream`.
    pub media_type: String,
    /// The bytes, or a URL.
    pub source: MediaSource,
    /// A file name, when there is one (providers show it to the model for documents).
    pub name: Option<String>,
}

/// Where a media part's bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MediaSource {
    /// The bytes themselves (or a reference to them: see [`Blob`]).
    Bytes(Blob),
    /// A URL the provider fetches (`https:`, or a `data:` URL).
    Url(String),
}

impl Media {
    /// Media from bytes.
    pub fn bytes(bytes: impl Into<bytes::Bytes>, media_type: impl Into<String>) -> Self {
        Media {
            media_type: media_type.into(),
            source: MediaSource::Bytes(Blob::new(bytes)),
            name: None,
        }
    }

    /// Media at a URL.
    pub fn url(url: impl Into<String>, media_type: impl Into<String>) -> Self {
        Media {
            media_type: media_type.into(),
            source: MediaSource::Url(url.into()),
            name: None,
        }
    }

    /// The same media with a file name.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The blob, when the media is bytes (not a URL).
    pub fn blob(&self) -> Option<&Blob> {
        match &self.source {
            MediaSource::Bytes(b) => Some(b),
            MediaSource::Url(_) => None,
        }
    }

    /// The loaded bytes, when the media is bytes held here.
    pub fn data(&self) -> Option<&[u8]> {
        self.blob().and_then(Blob::bytes).map(|b| b.as_ref())
    }

    /// The size in bytes, when known (not for URLs).
    pub fn size(&self) -> Option<u64> {
        self.blob().map(Blob::len)
    }

    /// The bytes as standard base64, when loaded.
    pub fn base64(&self) -> Option<String> {
        self.data().map(|d| BASE64.encode(d))
    }

    /// The media as a `data:` URL (for providers that take images as URLs), when loaded.
    pub fn data_url(&self) -> Option<String> {
        match &self.source {
            MediaSource::Url(url) => Some(url.clone()),
            MediaSource::Bytes(_) => self
                .base64()
                .map(|b| format!("data:{};base64,{b}", self.media_type)),
        }
    }

    /// True when the media type is `type/...` (`"image"`, `"audio"`, `"text"`, ...).
    pub fn is(&self, top_level: &str) -> bool {
        self.media_type
            .split_once('/')
            .is_some_and(|(t, _)| t.eq_ignore_ascii_case(top_level))
    }
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text(text.into())
    }

    /// An image from its bytes.
    pub fn image(bytes: impl Into<bytes::Bytes>, media_type: impl Into<String>) -> Self {
        Part::Image(Media::bytes(bytes, media_type))
    }

    /// An image at a URL (its type guessed from the URL's extension, else `image/*`).
    pub fn image_url(url: impl Into<String>) -> Self {
        let url = url.into();
        let media_type = media_type_by_name(&url).unwrap_or("image/*");
        Part::Image(Media::url(url, media_type))
    }

    /// A file (a document) from its bytes, with a name.
    pub fn file(
        bytes: impl Into<bytes::Bytes>,
        media_type: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        Part::File(Media::bytes(bytes, media_type).named(name))
    }

    /// A PDF document from its bytes.
    pub fn pdf(bytes: impl Into<bytes::Bytes>) -> Self {
        Part::File(Media::bytes(bytes, "application/pdf"))
    }

    /// Audio from its bytes.
    pub fn audio(bytes: impl Into<bytes::Bytes>, media_type: impl Into<String>) -> Self {
        Part::Audio(Media::bytes(bytes, media_type))
    }

    /// The part for a file's bytes: an image, audio, or a file (document) part by the media
    /// type its bytes (else its name) show, named after the file.
    pub fn from_file_bytes(bytes: impl Into<bytes::Bytes>, name: &str) -> Self {
        let bytes = bytes.into();
        let media_type = media_type_of(&bytes, Some(name));
        let file_name = Path::new(name)
            .file_name()
            .map_or_else(|| name.to_owned(), |n| n.to_string_lossy().into_owned());
        Part::of_media(Media::bytes(bytes, media_type).named(file_name))
    }

    /// The part `media` makes by its media type: an image (`image/*`), audio (`audio/*`), or
    /// a file.
    pub fn of_media(media: Media) -> Self {
        if media.is("image") {
            Part::Image(media)
        } else if media.is("audio") {
            Part::Audio(media)
        } else {
            Part::File(media)
        }
    }

    /// Reads a file into a part (see [`Part::from_file_bytes`]). Blocking: read files before a
    /// run starts, or on a blocking thread.
    pub fn read(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path)?;
        Ok(Part::from_file_bytes(bytes, &path.to_string_lossy()))
    }

    /// What kind of part this is.
    pub fn kind(&self) -> PartKind {
        match self {
            Part::Text(_) => PartKind::Text,
            Part::Image(_) => PartKind::Image,
            Part::File(_) => PartKind::File,
            Part::Audio(_) => PartKind::Audio,
        }
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Part::Text(t) => Some(t),
            _ => None,
        }
    }

    /// The media of an image, file or audio part.
    pub fn media(&self) -> Option<&Media> {
        match self {
            Part::Text(_) => None,
            Part::Image(m) | Part::File(m) | Part::Audio(m) => Some(m),
        }
    }

    /// The media of an image, file or audio part, to change it.
    pub fn media_mut(&mut self) -> Option<&mut Media> {
        match self {
            Part::Text(_) => None,
            Part::Image(m) | Part::File(m) | Part::Audio(m) => Some(m),
        }
    }

    /// A line that stands for the part where only text can go (logs, terminals, text-only
    /// models): the text itself, or `[image image/png, 12.3 KB, photo.png]`.
    pub fn describe(&self) -> String {
        match self {
            Part::Text(t) => t.clone(),
            Part::Image(m) | Part::File(m) | Part::Audio(m) => {
                let mut s = format!("[{} {}", self.kind(), m.media_type);
                match &m.source {
                    MediaSource::Bytes(b) => s.push_str(&format!(", {}", human_size(b.len()))),
                    MediaSource::Url(u) => s.push_str(&format!(", {u}")),
                }
                if let Some(name) = &m.name {
                    s.push_str(&format!(", {name}"));
                }
                s.push(']');
                s
            }
        }
    }
}

/// A size for people: `812 B`, `12.3 KB`, `5.0 MB`.
pub fn human_size(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} B"),
        1_000..1_000_000 => format!("{:.1} KB", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        _ => format!("{:.1} GB", n as f64 / 1e9),
    }
}

impl From<String> for Part {
    fn from(text: String) -> Self {
        Part::Text(text)
    }
}
impl From<&str> for Part {
    fn from(text: &str) -> Self {
        Part::Text(text.to_owned())
    }
}

// The JSON form: `{"type":"text","text":…}`; media as `{"type":"image","media_type":…,
// "name"?:…}` plus one of `"data"` (base64), `"url"`, or `"sha256"` and `"size"` (a reference).
impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("type", self.kind().as_str())?;
        match self {
            Part::Text(t) => map.serialize_entry("text", t)?,
            Part::Image(m) | Part::File(m) | Part::Audio(m) => {
                map.serialize_entry("media_type", &m.media_type)?;
                if let Some(name) = &m.name {
                    map.serialize_entry("name", name)?;
                }
                match &m.source {
                    MediaSource::Url(url) => map.serialize_entry("url", url)?,
                    MediaSource::Bytes(blob) => match blob.bytes() {
                        Some(bytes) => map.serialize_entry("data", &BASE64.encode(bytes))?,
                        None => {
                            map.serialize_entry("sha256", &blob.digest().to_string())?;
                            map.serialize_entry("size", &blob.len())?;
                        }
                    },
                }
            }
        }
        map.end()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PartRepr {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    media_type: Option<String>,
    name: Option<String>,
    data: Option<String>,
    url: Option<String>,
    sha256: Option<String>,
    size: Option<u64>,
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = PartRepr::deserialize(d)?;
        let media = |default_type: &str| -> Result<Media, D::Error> {
            let source = match (r.data.as_deref(), r.url.as_deref(), r.sha256.as_deref()) {
                (Some(data), None, None) => {
                    let bytes = BASE64.decode(data).map_err(|e| {
                        D::Error::custom(format!("a {} part's `data` is not base64: {e}", r.kind))
                    })?;
                    MediaSource::Bytes(Blob::new(bytes))
                }
                (None, Some(url), None) => MediaSource::Url(url.to_owned()),
                (None, None, Some(hex)) => {
                    let digest: BlobDigest = hex.parse().map_err(D::Error::custom)?;
                    let size = r.size.ok_or_else(|| {
                        D::Error::custom(format!(
                            "a {} part given by `sha256` needs its `size`",
                            r.kind
                        ))
                    })?;
                    MediaSource::Bytes(Blob::from_digest(digest, size))
                }
                _ => {
                    return Err(D::Error::custom(format!(
                        "a {} part needs exactly one of `data` (base64), `url`, or `sha256` with `size`",
                        r.kind
                    )));
                }
            };
            let media_type = match (&r.media_type, &source) {
                (Some(t), _) => t.clone(),
                (None, MediaSource::Bytes(blob)) => media_type_of(
                    blob.bytes().map_or(&[][..], |b| b.as_ref()),
                    r.name.as_deref(),
                )
                .to_owned(),
                (None, MediaSource::Url(url)) => {
                    media_type_by_name(url).unwrap_or(default_type).to_owned()
                }
            };
            Ok(Media {
                media_type,
                source,
                name: r.name.clone(),
            })
        };
        match r.kind.as_str() {
            "text" => r
                .text
                .clone()
                .map(Part::Text)
                .ok_or_else(|| D::Error::missing_field("text")),
            "image" => media("image/*").map(Part::Image),
            "file" | "document" => media("application/octet-stream").map(Part::File),
            "audio" => media("audio/*").map(Part::Audio),
            other => Err(D::Error::custom(format!(
                "unknown part type `{other}`: expected text, image, file or audio"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_round_trip_in_every_source() {
        let parts = [
            Part::text("hi"),
            Part::image(vec![1, 2, 3], "image/png"),
            Part::image_url("https://example.com/cat.jpg"),
            Part::file(b"%PDF-1.4".to_vec(), "application/pdf", "a.pdf"),
            Part::audio(vec![0; 4], "audio/wav"),
            Part::Image(Media {
                media_type: "image/png".into(),
                source: MediaSource::Bytes(Blob::new(vec![9; 10]).reference()),
                name: None,
            }),
        ];
        for p in parts {
            let json = serde_json::to_string(&p).unwrap();
            let back: Part = serde_json::from_str(&json).unwrap();
            assert_eq!(back, p, "{json}");
        }
        assert_eq!(
            serde_json::to_value(Part::image(vec![1, 2, 3], "image/png")).unwrap(),
            json!({"type": "image", "media_type": "image/png", "data": "AQID"})
        );
        assert_eq!(
            Part::image_url("https://x/y.webp")
                .media()
                .unwrap()
                .media_type,
            "image/webp"
        );
    }

    #[test]
    fn bad_parts_say_what_is_wrong() {
        let err = |v: serde_json::Value| serde_json::from_value::<Part>(v).unwrap_err().to_string();
        assert!(
            err(json!({"type": "image", "media_type": "image/png"})).contains("exactly one of")
        );
        assert!(err(json!({"type": "video", "url": "x"})).contains("unknown part type `video`"));
        assert!(err(json!({"type": "image", "data": "%%%"})).contains("not base64"));
        assert!(err(json!({"type": "file", "sha256": "ab"})).contains("SHA-256"));
    }

    #[test]
    fn files_become_the_part_their_bytes_show() {
        assert_eq!(
            Part::from_file_bytes(b"\x89PNG\r\n\x1a\n".to_vec(), "dir/shot.png").kind(),
            PartKind::Image
        );
        let pdf = Part::from_file_bytes(b"%PDF-1.7".to_vec(), "x/invoice.pdf");
        assert_eq!(pdf.kind(), PartKind::File);
        assert_eq!(pdf.media().unwrap().name.as_deref(), Some("invoice.pdf"));
        assert_eq!(
            Part::image(vec![0; 12_300], "image/png").describe(),
            "[image image/png, 12.3 KB]"
        );
    }
}
