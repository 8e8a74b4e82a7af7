//! The bytes of an image, document or audio part: shared, hashed once, and either loaded or
//! only referenced by their SHA-256 (a store or a hook may hold them elsewhere).

use bytes::Bytes;
use sha2::{Digest as _, Sha256};
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

/// The SHA-256 of a blob's bytes: what stores, external hooks and durable runtimes refer to a
/// part's bytes by. Written as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobDigest([u8; 32]);

impl BlobDigest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        BlobDigest(Sha256::digest(bytes).into())
    }

    /// The digest's 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A digest from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        BlobDigest(bytes)
    }
}

impl fmt::Display for BlobDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for BlobDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{self}")
    }
}

/// A SHA-256 digest that is not 64 hex digits.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a SHA-256 digest: expected 64 hex digits")]
pub struct BadDigest(String);

impl FromStr for BlobDigest {
    type Err = BadDigest;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s.strip_prefix("sha256:").unwrap_or(s);
        let bad = || BadDigest(s.chars().take(80).collect());
        if hex.len() != 64 || !hex.is_ascii() {
            return Err(bad());
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(BlobDigest(out))
    }
}

/// The bytes of a media part. Cloning shares them; the digest is computed at most once.
///
/// A blob is *loaded* (it holds its bytes) or a *reference* (its digest and size only): stores
/// write a part's bytes once, content-addressed, and keep references in the history; durable
/// runtimes pass references through their workflow history. [`Blob::bytes`] is `None` for a
/// reference; the store that wrote it gives the bytes back when it loads the run.
///
/// ```
/// use agentry_core::content::Blob;
/// let blob = Blob::new(b"hello".to_vec());
/// assert_eq!(blob.len(), 5);
/// let reference = blob.reference();
/// assert!(reference.bytes().is_none());
/// assert_eq!(reference.digest(), blob.digest());
/// assert_eq!(reference, blob); // equal by content
/// ```
#[derive(Clone)]
pub struct Blob(Arc<Inner>);

struct Inner {
    bytes: Option<Bytes>,
    len: u64,
    digest: OnceLock<BlobDigest>,
}

impl Blob {
    /// A loaded blob.
    pub fn new(bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        Blob(Arc::new(Inner {
            len: bytes.len() as u64,
            bytes: Some(bytes),
            digest: OnceLock::new(),
        }))
    }

    /// A reference to bytes held elsewhere.
    pub fn from_digest(digest: BlobDigest, len: u64) -> Self {
        Blob(Arc::new(Inner {
            bytes: None,
            len,
            digest: OnceLock::from(digest),
        }))
    }

    /// The bytes, when loaded.
    pub fn bytes(&self) -> Option<&Bytes> {
        self.0.bytes.as_ref()
    }

    /// True when the bytes are here (not a reference).
    pub fn is_loaded(&self) -> bool {
        self.0.bytes.is_some()
    }

    /// The size in bytes.
    pub fn len(&self) -> u64 {
        self.0.len
    }

    /// True for zero bytes.
    pub fn is_empty(&self) -> bool {
        self.0.len == 0
    }

    /// The SHA-256 of the bytes, computed on first use.
    pub fn digest(&self) -> BlobDigest {
        *self.0.digest.get_or_init(|| {
            BlobDigest::of(
                self.0
                    .bytes
                    .as_deref()
                    .expect("a reference blob is created with its digest"),
            )
        })
    }

    /// A reference to the same bytes (digest and size, no bytes).
    pub fn reference(&self) -> Blob {
        if !self.is_loaded() {
            return self.clone();
        }
        Blob::from_digest(self.digest(), self.len())
    }

    /// The same blob with its bytes, after checking they are the ones the digest names.
    pub fn load(&self, bytes: Bytes) -> Result<Blob, BlobMismatch> {
        let found = BlobDigest::of(&bytes);
        if found != self.digest() {
            return Err(BlobMismatch {
                expected: self.digest(),
                found,
            });
        }
        Ok(Blob(Arc::new(Inner {
            len: bytes.len() as u64,
            bytes: Some(bytes),
            digest: OnceLock::from(found),
        })))
    }
}

/// Bytes given for a blob reference whose digest they do not match.
#[derive(Debug, thiserror::Error)]
#[error(
    "the bytes given for blob sha256:{expected} hash to sha256:{found}: the blob store is corrupt or holds another blob under that name"
)]
pub struct BlobMismatch {
    /// The digest the reference names.
    pub expected: BlobDigest,
    /// The digest of the bytes given.
    pub found: BlobDigest,
}

impl PartialEq for Blob {
    fn eq(&self, other: &Self) -> bool {
        if Arc::ptr_eq(&self.0, &other.0) {
            return true;
        }
        if self.len() != other.len() {
            return false;
        }
        match (self.bytes(), other.bytes()) {
            (Some(a), Some(b)) => a == b,
            _ => self.digest() == other.digest(),
        }
    }
}
impl Eq for Blob {}

impl fmt::Debug for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Blob");
        d.field("len", &self.len());
        if let Some(digest) = self.0.digest.get() {
            d.field("sha256", &format_args!("{digest}"));
        }
        d.field("loaded", &self.is_loaded()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_parse_and_print() {
        let d = BlobDigest::of(b"abc");
        assert_eq!(
            d.to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(d.to_string().parse::<BlobDigest>().unwrap(), d);
        assert_eq!(format!("sha256:{d}").parse::<BlobDigest>().unwrap(), d);
        assert!("abc".parse::<BlobDigest>().is_err());
        assert!("zz".repeat(32).parse::<BlobDigest>().is_err());
    }

    #[test]
    fn loading_checks_the_digest() {
        let blob = Blob::new(b"abc".to_vec());
        let reference = blob.reference();
        assert!(reference.load(Bytes::from_static(b"abd")).is_err());
        let loaded = reference.load(Bytes::from_static(b"abc")).unwrap();
        assert_eq!(loaded.bytes().unwrap().as_ref(), b"abc");
        assert_ne!(Blob::new(b"abd".to_vec()), blob);
    }
}
