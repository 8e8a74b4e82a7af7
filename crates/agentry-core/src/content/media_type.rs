//! Telling a file's media type from its first bytes, or else from its name, for the types model
//! providers accept (PNG, JPEG, GIF and WebP images; PDF; WAV, MP3, FLAC and Ogg audio; text).

/// The media type of `bytes`, read from their signature, else from `name`'s extension, else
/// `application/octet-stream`.
///
/// ```
/// use agentry_core::content::media_type_of;
/// assert_eq!(media_type_of(b"\x89PNG\r\n\x1a\n....", None), "image/png");
/// assert_eq!(media_type_of(b"%PDF-1.7", Some("a.bin")), "application/pdf");
/// assert_eq!(media_type_of(b"# notes", Some("notes.md")), "text/markdown");
/// assert_eq!(media_type_of(b"\x00\x01", None), "application/octet-stream");
/// ```
pub fn media_type_of(bytes: &[u8], name: Option<&str>) -> &'static str {
    sniff(bytes)
        .or_else(|| name.and_then(by_extension))
        .unwrap_or("application/octet-stream")
}

/// The media type a file name's extension suggests, for the types providers accept.
pub fn media_type_by_name(name: &str) -> Option<&'static str> {
    by_extension(name)
}

fn sniff(b: &[u8]) -> Option<&'static str> {
    let riff = |kind: &[u8]| b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == kind;
    Some(if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else if b.starts_with(&[0xFF, 0xD8, 0xFF]) {
        "image/jpeg"
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        "image/gif"
    } else if riff(b"WEBP") {
        "image/webp"
    } else if b.starts_with(b"%PDF-") {
        "application/pdf"
    } else if riff(b"WAVE") {
        "audio/wav"
    } else if b.starts_with(b"ID3") || b.starts_with(&[0xFF, 0xFB]) || b.starts_with(&[0xFF, 0xF3])
    {
        "audio/mpeg"
    } else if b.starts_with(b"fLaC") {
        "audio/flac"
    } else if b.starts_with(b"OggS") {
        "audio/ogg"
    } else {
        return None;
    })
}

/// File extensions and the media types they stand for; the first extension of a type is the
/// one [`extension_of`] gives.
const EXTENSIONS: &[(&str, &str)] = &[
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
    ("pdf", "application/pdf"),
    ("wav", "audio/wav"),
    ("mp3", "audio/mpeg"),
    ("flac", "audio/flac"),
    ("ogg", "audio/ogg"),
    ("oga", "audio/ogg"),
    ("txt", "text/plain"),
    ("log", "text/plain"),
    ("md", "text/markdown"),
    ("markdown", "text/markdown"),
    ("csv", "text/csv"),
    ("html", "text/html"),
    ("htm", "text/html"),
    ("json", "application/json"),
];

/// The usual file extension of `media_type` (`png` for `image/png`), for the types providers
/// accept.
///
/// ```
/// use agentry_core::content::extension_of;
/// assert_eq!(extension_of("image/jpeg"), Some("jpg"));
/// assert_eq!(extension_of("video/mp4"), None);
/// ```
pub fn extension_of(media_type: &str) -> Option<&'static str> {
    let media_type = if media_type == "audio/x-wav" {
        "audio/wav"
    } else {
        media_type
    };
    EXTENSIONS
        .iter()
        .find(|(_, t)| *t == media_type)
        .map(|(ext, _)| *ext)
}

fn by_extension(name: &str) -> Option<&'static str> {
    let path = name.split(['?', '#']).next().unwrap_or(name);
    let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
    EXTENSIONS
        .iter()
        .find(|(e, _)| *e == ext)
        .map(|(_, media_type)| *media_type)
}
