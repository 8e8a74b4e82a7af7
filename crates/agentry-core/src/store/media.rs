//! Media bytes in stores: kept once, content-addressed by SHA-256, out of the message rows.
//!
//! A store that writes messages as text calls [`detach_media`] on a checkpoint's appended
//! messages: it gets the messages to write, their media replaced by references (digest and
//! size), and the blobs to keep once each (an insert that ignores a digest it already holds).
//! Loading, it reads the messages back, asks [`missing_blobs`] which bytes they name, and gives
//! them back with [`attach_media`].

use crate::Message;
use crate::content::{Blob, BlobDigest};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// `messages` as a store writes them, media by reference, and the blobs that hold the bytes
/// (each digest once). Messages without loaded media are shared, not copied: a checkpoint
/// with no media costs a scan of its parts.
pub fn detach_media(messages: &[Arc<Message>]) -> (Cow<'_, [Arc<Message>]>, Vec<Blob>) {
    let loaded = |m: &Message| m.content().is_some_and(|c| c.blobs().any(Blob::is_loaded));
    if !messages.iter().any(|m| loaded(m)) {
        return (Cow::Borrowed(messages), Vec::new());
    }
    let mut blobs: Vec<Blob> = Vec::new();
    let detached = messages
        .iter()
        .map(|m| {
            if !loaded(m) {
                return m.clone();
            }
            let mut message = (**m).clone();
            if let Some(content) = message.content_mut() {
                for blob in content.blobs().filter(|b| b.is_loaded()) {
                    if !blobs.iter().any(|b| b.digest() == blob.digest()) {
                        blobs.push(blob.clone());
                    }
                }
                *content = content.references();
            }
            Arc::new(message)
        })
        .collect();
    (Cow::Owned(detached), blobs)
}

/// The digests of the bytes `messages` name but do not hold.
pub fn missing_blobs<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<BlobDigest> {
    let mut missing = Vec::new();
    for m in messages {
        for blob in m.content().into_iter().flat_map(|c| c.blobs()) {
            if !blob.is_loaded() && !missing.contains(&blob.digest()) {
                missing.push(blob.digest());
            }
        }
    }
    missing
}

/// Gives `message` the bytes its references name, from `found`; the digest of the first that
/// `found` lacks otherwise.
pub fn attach_media(
    message: &mut Message,
    found: &HashMap<BlobDigest, Blob>,
) -> Result<(), BlobDigest> {
    if let Some(content) = message.content_mut() {
        content.load_blobs(|b| found.get(&b.digest()).cloned().ok_or(b.digest()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::Part;

    #[test]
    fn media_go_out_once_and_come_back() {
        let image = Part::image(vec![3; 100], "image/png");
        let messages: Vec<Arc<Message>> = vec![
            Arc::new(Message::user("plain")),
            Arc::new(Message::user([Part::text("a"), image.clone()])),
            Arc::new(Message::user([image])),
        ];
        let (detached, blobs) = detach_media(&messages);
        assert_eq!(blobs.len(), 1, "one blob per content");
        assert!(
            Arc::ptr_eq(&detached[0], &messages[0]),
            "text is not copied"
        );
        assert_eq!(missing_blobs(detached.iter().map(|m| &**m)).len(), 1);
        let found: HashMap<_, _> = blobs.iter().map(|b| (b.digest(), b.clone())).collect();
        let mut back = (*detached[1]).clone();
        attach_media(&mut back, &found).unwrap();
        assert_eq!(back, *messages[1]);
        assert!(back.content().unwrap().blobs().all(Blob::is_loaded));
        let mut orphan = (*detached[2]).clone();
        assert!(attach_media(&mut orphan, &HashMap::new()).is_err());
        let plain = [Arc::new(Message::user("x"))];
        assert!(matches!(detach_media(&plain).0, Cow::Borrowed(_)));
    }
}
