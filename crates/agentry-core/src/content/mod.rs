//! Multimodal content: a message is a list of parts (text, images, files, audio).
//!
//! [`Content`] is what a user, assistant or tool-result message carries. Text-only content (the
//! common case) is one text part and is written in JSON as a plain string, so histories written
//! before parts existed load unchanged; content with media is written as an array of
//! [`Part`]s. Media bytes are a shared [`Blob`]: cloning a message never copies them, and
//! stores keep them once, content-addressed by SHA-256.
//!
//! ```
//! use agentry_core::Message;
//! use agentry_core::content::{Content, Part};
//! let photo = Part::image(b"\x89PNG\r\n\x1a\n...".to_vec(), "image/png");
//! let ask = Message::user([Part::text("What is in this picture?"), photo]);
//! assert_eq!(ask.text(), "What is in this picture?");
//! assert_eq!(ask.content().unwrap().media().count(), 1);
//! assert_eq!(serde_json::to_value(Content::from("hi")).unwrap(), "hi");
//! ```

mod blob;
mod cut;
mod media_type;
mod part;

pub use blob::{BadDigest, Blob, BlobDigest, BlobMismatch};
pub use media_type::{extension_of, media_type_by_name, media_type_of};
pub use part::{Media, MediaSource, Part, PartKind, human_size};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;

/// The content of a message: its parts, in order.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Content(Vec<Part>);

/// Text-only content shows as its string; other content as its list of parts.
impl fmt::Debug for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_text() {
            Some(text) => fmt::Debug::fmt(text, f),
            None => f.debug_list().entries(&self.0).finish(),
        }
    }
}

impl Content {
    /// Empty content.
    pub const fn new() -> Self {
        Content(Vec::new())
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[Part] {
        &self.0
    }

    /// The parts, to inspect, drop, replace or add to.
    pub fn parts_mut(&mut self) -> &mut Vec<Part> {
        &mut self.0
    }

    /// The parts, taken.
    pub fn into_parts(self) -> Vec<Part> {
        self.0
    }

    /// Appends a part.
    pub fn push(&mut self, part: impl Into<Part>) {
        self.0.push(part.into());
    }

    /// Appends text to the last part when it is text, else as a new text part.
    pub fn push_str(&mut self, text: &str) {
        match self.0.last_mut() {
            Some(Part::Text(t)) => t.push_str(text),
            _ if text.is_empty() => {}
            _ => self.0.push(Part::Text(text.to_owned())),
        }
    }

    /// Adds `text` as a new paragraph: after a blank line when the content ends with text, as a
    /// new text part after media (how hooks add context to an input or a tool result).
    pub fn append_paragraph(&mut self, text: &str) {
        match self.0.last_mut() {
            Some(Part::Text(t)) if !t.is_empty() => {
                t.push_str("\n\n");
                t.push_str(text);
            }
            Some(Part::Text(t)) => t.push_str(text),
            _ if text.is_empty() => {}
            _ => self.0.push(Part::Text(text.to_owned())),
        }
    }

    /// Removes every part.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// True when there is no part, or only empty text.
    pub fn is_empty(&self) -> bool {
        self.0
            .iter()
            .all(|p| matches!(p, Part::Text(t) if t.is_empty()))
    }

    /// The text, when the content is text only (one text part, or none): borrowed, no copy.
    pub fn as_text(&self) -> Option<&str> {
        match self.0.as_slice() {
            [] => Some(""),
            [Part::Text(t)] => Some(t),
            _ => None,
        }
    }

    /// The text parts joined by newlines (media left out). Borrowed for text-only content.
    pub fn text(&self) -> Cow<'_, str> {
        if let Some(t) = self.as_text() {
            return Cow::Borrowed(t);
        }
        let mut texts = self.0.iter().filter_map(Part::as_text);
        match (texts.next(), texts.next()) {
            (None, _) => Cow::Borrowed(""),
            (Some(t), None) => Cow::Borrowed(t),
            (Some(a), Some(b)) => {
                let mut s = format!("{a}\n{b}");
                for t in texts {
                    s.push('\n');
                    s.push_str(t);
                }
                Cow::Owned(s)
            }
        }
    }

    /// The content as text for places only text can go (logs, terminals, text-only models):
    /// text parts as they are, media as a bracketed line such as `[image image/png, 12.3 KB]`.
    pub fn describe(&self) -> Cow<'_, str> {
        if !self.has_media() {
            return self.text();
        }
        Cow::Owned(
            self.0
                .iter()
                .map(Part::describe)
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }

    /// True when a part is an image, a file or audio.
    pub fn has_media(&self) -> bool {
        self.0.iter().any(|p| !matches!(p, Part::Text(_)))
    }

    /// The media parts (images, files, audio), in order.
    pub fn media(&self) -> impl Iterator<Item = &Part> {
        self.0.iter().filter(|p| p.media().is_some())
    }

    /// The blobs of the media parts given as bytes (loaded or referenced).
    pub fn blobs(&self) -> impl Iterator<Item = &Blob> {
        self.0.iter().filter_map(|p| p.media()?.blob())
    }

    /// The same content with every loaded blob replaced by a reference to it (its digest and
    /// size): what stores and durable runtimes write, having kept the bytes once elsewhere.
    pub fn references(&self) -> Content {
        Content(
            self.0
                .iter()
                .map(|p| {
                    let mut p = p.clone();
                    if let Some(m) = p.media_mut()
                        && let MediaSource::Bytes(b) = &m.source
                        && b.is_loaded()
                    {
                        m.source = MediaSource::Bytes(b.reference());
                    }
                    p
                })
                .collect(),
        )
    }

    /// Gives every referenced blob its bytes from `find` (a store's blob table, a directory):
    /// `Ok` with the number of blobs loaded, or the first error `find` returned.
    pub fn load_blobs<E>(
        &mut self,
        mut find: impl FnMut(&Blob) -> Result<Blob, E>,
    ) -> Result<usize, E> {
        let mut loaded = 0;
        for part in &mut self.0 {
            if let Some(m) = part.media_mut()
                && let MediaSource::Bytes(b) = &m.source
                && !b.is_loaded()
            {
                m.source = MediaSource::Bytes(find(b)?);
                loaded += 1;
            }
        }
        Ok(loaded)
    }
}

impl fmt::Display for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        if text.is_empty() {
            return Content::new();
        }
        Content(vec![Part::Text(text)])
    }
}
impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Content::from(text.to_owned())
    }
}
impl From<&String> for Content {
    fn from(text: &String) -> Self {
        Content::from(text.as_str())
    }
}
impl From<Cow<'_, str>> for Content {
    fn from(text: Cow<'_, str>) -> Self {
        Content::from(text.into_owned())
    }
}
impl From<Part> for Content {
    fn from(part: Part) -> Self {
        Content(vec![part])
    }
}
impl From<Vec<Part>> for Content {
    fn from(parts: Vec<Part>) -> Self {
        Content(parts)
    }
}
impl<const N: usize> From<[Part; N]> for Content {
    fn from(parts: [Part; N]) -> Self {
        Content(parts.into())
    }
}
impl FromIterator<Part> for Content {
    fn from_iter<I: IntoIterator<Item = Part>>(iter: I) -> Self {
        Content(iter.into_iter().collect())
    }
}

impl PartialEq<str> for Content {
    fn eq(&self, other: &str) -> bool {
        self.as_text() == Some(other)
    }
}
impl PartialEq<&str> for Content {
    fn eq(&self, other: &&str) -> bool {
        self.as_text() == Some(*other)
    }
}
impl PartialEq<String> for Content {
    fn eq(&self, other: &String) -> bool {
        self.as_text() == Some(other.as_str())
    }
}

// A string for no part or one non-empty text part (an empty string reads back as no part), an
// array otherwise: every content reads back as it was written.
impl Serialize for Content {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.as_slice() {
            [] => s.serialize_str(""),
            [Part::Text(text)] if !text.is_empty() => s.serialize_str(text),
            parts => parts.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged, expecting = "text, or an array of parts")]
        enum Repr {
            Text(String),
            Parts(Vec<Part>),
        }
        Ok(match Repr::deserialize(d)? {
            Repr::Text(t) => Content::from(t),
            Repr::Parts(p) => Content(p),
        })
    }
}

impl schemars::JsonSchema for Content {
    fn schema_name() -> Cow<'static, str> {
        "Content".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Text, or an array of parts: {\"type\":\"text\",\"text\"}, or {\"type\":\"image\"|\"file\"|\"audio\",\"media_type\",\"name\"?} with one of \"data\" (base64), \"url\", or \"sha256\" and \"size\".",
            "anyOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": "object", "required": ["type"], "properties": {"type": {"enum": ["text", "image", "file", "audio"]}}}}
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_only_content_is_a_string_and_media_an_array() {
        let text = Content::from("hello");
        assert_eq!(serde_json::to_value(&text).unwrap(), json!("hello"));
        assert_eq!(
            serde_json::from_value::<Content>(json!("hello")).unwrap(),
            text
        );
        assert_eq!(serde_json::to_value(Content::new()).unwrap(), json!(""));
        let mixed = Content::from([Part::text("see"), Part::image(vec![1], "image/png")]);
        let v = serde_json::to_value(&mixed).unwrap();
        assert_eq!(v[1]["type"], "image");
        assert_eq!(serde_json::from_value::<Content>(v).unwrap(), mixed);
    }

    #[test]
    fn text_joins_text_parts_and_describe_names_media() {
        let c = Content::from([
            Part::text("a"),
            Part::image(vec![0; 2_000], "image/png"),
            Part::text("b"),
        ]);
        assert_eq!(c.text(), "a\nb");
        assert_eq!(c.describe(), "a\n[image image/png, 2.0 KB]\nb");
        assert!(c.as_text().is_none());
        assert!(matches!(Content::from("x").text(), Cow::Borrowed("x")));
    }

    #[test]
    fn paragraphs_join_text_and_follow_media() {
        let mut c = Content::from("a");
        c.append_paragraph("b");
        assert_eq!(c, "a\n\nb");
        let mut c = Content::new();
        c.append_paragraph("b");
        assert_eq!(c, "b");
        let mut c = Content::from(Part::image(vec![1], "image/png"));
        c.append_paragraph("note");
        assert_eq!(c.parts().len(), 2);
        assert_eq!(c.text(), "note");
    }

    fn any_part() -> impl proptest::strategy::Strategy<Value = Part> {
        use proptest::prelude::*;
        let bytes = || proptest::collection::vec(any::<u8>(), 0..48);
        prop_oneof![
            ".{0,12}".prop_map(Part::Text),
            (bytes(), "image/(png|jpeg|webp)").prop_map(|(b, t)| Part::image(b, t)),
            (bytes(), "[a-z]{1,8}\\.pdf").prop_map(|(b, n)| Part::file(b, "application/pdf", n)),
            (bytes(), "audio/(wav|mpeg)").prop_map(|(b, t)| Part::audio(b, t)),
            "https://[a-z]{1,8}\\.test/[a-z]{0,8}\\.(png|jpg|gif)".prop_map(Part::image_url),
            bytes().prop_map(|b| Part::Image(Media {
                media_type: "image/png".into(),
                source: MediaSource::Bytes(Blob::new(b).reference()),
                name: None,
            })),
        ]
    }

    proptest::proptest! {
        #[test]
        fn any_content_round_trips_through_json(
            parts in proptest::collection::vec(any_part(), 0..6)
        ) {
            let content = Content::from(parts);
            let json = serde_json::to_string(&content).unwrap();
            let back: Content = serde_json::from_str(&json).unwrap();
            proptest::prop_assert_eq!(back.parts(), content.parts(), "{}", json);
            let message = crate::Message::user(content);
            let json = serde_json::to_string(&message).unwrap();
            proptest::prop_assert_eq!(serde_json::from_str::<crate::Message>(&json).unwrap(), message);
        }
    }

    #[test]
    fn recorded_events_hold_media_by_reference() {
        use crate::{Message, RunEvent};
        use std::sync::Arc;
        let message = |m: Message| RunEvent::Message {
            message: Arc::new(m),
            agent_path: "a".into(),
            run_id: None,
        };
        let with_image = message(Message::user([
            Part::text("see"),
            Part::image(vec![1; 1000], "image/png"),
        ]));
        let recorded = with_image.to_recorded().unwrap();
        let part = &recorded.data["message"]["content"][1];
        assert_eq!(part["size"], 1000, "{part}");
        assert!(part.get("data").is_none(), "{part}");
        assert!(
            message(Message::user("hi"))
                .with_media_references()
                .is_none()
        );
    }

    #[test]
    fn references_keep_digests_and_load_back() {
        let c = Content::from([Part::text("a"), Part::image(vec![7; 64], "image/png")]);
        let mut r = c.references();
        assert!(r.blobs().all(|b| !b.is_loaded()));
        assert_eq!(r, c);
        let original = c.blobs().next().unwrap().clone();
        let n = r
            .load_blobs(|b| b.load(original.bytes().unwrap().clone()))
            .unwrap();
        assert_eq!(n, 1);
        assert!(r.blobs().all(Blob::is_loaded));
    }
}
