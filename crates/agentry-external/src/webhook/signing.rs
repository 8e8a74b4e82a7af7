//! Standard Webhooks signatures (<https://www.standardwebhooks.com>): `webhook-signature` is
//! `v1,` and the base64 of HMAC-SHA256 over `{id}.{timestamp}.{body}`, keyed with the bytes of a
//! `whsec_<base64>` secret.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::fmt;

/// The key a `whsec_...` secret decodes to. Its `Debug` shows nothing of it.
pub(crate) struct SigningKey(Vec<u8>);

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

/// Why a secret is not a Standard Webhooks secret. Says nothing of the secret itself.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum KeyError {
    #[error("is empty")]
    Empty,
    #[error("is not base64 after its `whsec_` prefix")]
    NotBase64,
}

impl SigningKey {
    /// Reads a secret in the Standard Webhooks form: `whsec_` and the key in base64 (the prefix
    /// may be left out, as the reference libraries allow).
    pub(crate) fn parse(secret: &str) -> Result<SigningKey, KeyError> {
        let encoded = secret.trim();
        let encoded = encoded.strip_prefix("whsec_").unwrap_or(encoded);
        if encoded.is_empty() {
            return Err(KeyError::Empty);
        }
        let key = STANDARD.decode(encoded).map_err(|_| KeyError::NotBase64)?;
        if key.is_empty() {
            return Err(KeyError::Empty);
        }
        Ok(SigningKey(key))
    }

    /// The `webhook-signature` header value for one delivery attempt.
    pub(crate) fn sign(&self, id: &str, timestamp: u64, body: &[u8]) -> String {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any size");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_specifications_test_vector() {
        let key = SigningKey::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(
            key.sign(
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        // Without the prefix, the same key.
        let bare = SigningKey::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(bare.0, key.0);
    }

    #[test]
    fn bad_secrets_say_what_is_wrong_without_the_secret() {
        assert_eq!(SigningKey::parse("whsec_").unwrap_err(), KeyError::Empty);
        let e = SigningKey::parse("whsec_not base64!").unwrap_err();
        assert_eq!(e, KeyError::NotBase64);
        assert!(!e.to_string().contains("not base64!"));
        assert_eq!(
            format!("{:?}", SigningKey::parse("c2VjcmV0").unwrap()),
            "SigningKey(..)"
        );
    }
}
