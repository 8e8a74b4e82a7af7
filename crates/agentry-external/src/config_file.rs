//! Reading a settings or config file that someone else wrote, bounded: a file past the limit is
//! refused before it is read whole, so a huge or endless file (a device, a pipe) costs nothing.

use std::io::Read;
use std::path::Path;

/// The most bytes a settings or config file may have unless `AGENTRY_MAX_CONFIG_BYTES` says
/// otherwise (4 MiB).
pub const DEFAULT_MAX_CONFIG_BYTES: u64 = 4 << 20;

/// The environment variable that sets the config file limit, in bytes.
pub const MAX_CONFIG_BYTES_VAR: &str = "AGENTRY_MAX_CONFIG_BYTES";

/// The most bytes a settings or config file may have: `AGENTRY_MAX_CONFIG_BYTES` when it is a
/// positive number, else [`DEFAULT_MAX_CONFIG_BYTES`].
pub fn max_config_bytes() -> u64 {
    std::env::var(MAX_CONFIG_BYTES_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_MAX_CONFIG_BYTES)
}

/// Reads `path` as UTF-8 text of at most [`max_config_bytes`] bytes. A longer file is an
/// error (of kind `InvalidData`) that says how long it is and names the limit and its
/// variable; it is never read past the limit.
pub fn read_config_file(path: &Path) -> std::io::Result<String> {
    let max = max_config_bytes();
    let file = std::fs::File::open(path)?;
    let too_long = |len: String| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "it is {len} bytes, over the limit of {max} for a config file (set {MAX_CONFIG_BYTES_VAR} to allow more)"
            ),
        )
    };
    let len = file.metadata()?.len();
    if len > max {
        return Err(too_long(len.to_string()));
    }
    let mut text = String::new();
    file.take(max + 1).read_to_string(&mut text)?;
    if text.len() as u64 > max {
        return Err(too_long("more than that".to_owned()));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_the_limit_is_refused_with_the_limit_named() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.json");
        std::fs::write(&small, "{}").unwrap();
        assert_eq!(read_config_file(&small).unwrap(), "{}");
        let big = dir.path().join("big.json");
        std::fs::write(&big, vec![b' '; (DEFAULT_MAX_CONFIG_BYTES + 1) as usize]).unwrap();
        let e = read_config_file(&big).unwrap_err().to_string();
        assert!(e.contains("over the limit of 4194304"), "{e}");
        assert!(e.contains(MAX_CONFIG_BYTES_VAR), "{e}");
    }

    #[test]
    fn an_endless_file_is_read_only_to_the_limit() {
        let e = read_config_file(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}");
    }
}
