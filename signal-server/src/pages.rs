//! The HTML pages and static assets: from a directory on disk, or embedded in the binary.
//!
//! Pages (`/`, `/room/{name}`, the dashboards) are served `Cache-Control: no-cache`, so a
//! deploy is picked up at the next load. Every other file (scripts, styles, the wasm bundle,
//! vendor files) is also served under a versioned URL, `/v/{version}/{path}`, where `version`
//! is a hash of all of those files' bytes: `Cache-Control: public, max-age=31536000,
//! immutable`, from a copy held in memory (so the bytes always match the version in the URL),
//! compressed once per encoding and kept. Pages are rewritten as they are served to point at
//! the versioned URLs, with an import map so that the scripts' own `import … from '/pkg/…'`
//! land there too, and with them the wasm bundle, which the bindings fetch relative to their
//! own URL. The unversioned paths keep working, `no-cache`, compressed on the fly (see
//! [`compression`]); so does a version the server does not hold (stale, from before a
//! deploy): served like the unversioned path, never `immutable`.
//!
//! With `--web-dir`, and in debug builds (which read the embedded folder at run time),
//! the copy is refreshed when a page is served and the files changed on disk; release builds
//! hash their embedded copy once.

use std::{
    collections::{BTreeMap, HashMap},
    fmt,
    io::Write,
    path::{Path as FsPath, PathBuf},
    sync::{Arc, OnceLock, RwLock},
    time::SystemTime,
};

use axum::{
    body::{Body, Bytes},
    extract::{Path, Request, State},
    http::{
        Extensions, HeaderMap, HeaderValue, StatusCode, Uri, Version, header, uri::PathAndQuery,
    },
    response::{IntoResponse, Redirect, Response},
    routing::get,
};
use rust_embed::RustEmbed;
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tower::ServiceExt;
use tower_http::{
    compression::{
        CompressionLayer,
        predicate::{And, DefaultPredicate, Predicate},
    },
    services::ServeDir,
};

use crate::{AppState, config::StaticDir, protocol::validate_room_name};

/// `web/` compiled into the binary (release builds; debug builds read the folder at run time):
/// the repository's, or in the published package the copy `cargo xtask package` put in its
/// `assets/` (`build.rs` says which).
#[derive(RustEmbed)]
#[cfg_attr(not(ackwire_packaged), folder = "../web/")]
#[cfg_attr(ackwire_packaged, folder = "assets/")]
#[exclude = "node_modules/**"]
#[exclude = "e2e/**"]
#[exclude = "package*.json"]
// The npm package's template and its type check (`xtask/src/npm.rs`): tooling, not pages.
#[exclude = "npm/**"]
#[exclude = "types-check/**"]
#[exclude = "test-results/**"]
struct Embedded;

/// Where debug builds' [`Embedded`] reads from.
#[cfg(not(ackwire_packaged))]
const EMBEDDED_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../web");
#[cfg(ackwire_packaged)]
const EMBEDDED_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets");

/// The prefix of versioned asset URLs: `/v/{version}/{path}`.
pub const VERSIONED_PREFIX: &str = "/v/";

/// `Cache-Control` of versioned assets.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// `Cache-Control` of pages and unversioned assets: stored, but revalidated before each use.
pub const NO_CACHE: &str = "no-cache";

/// Names skipped when a directory is scanned for assets, at any depth: what the embedded copy
/// leaves out too (tooling, tests, their output), and dotfiles.
fn skipped(name: &str) -> bool {
    name.starts_with('.')
        || matches!(
            name,
            "node_modules" | "e2e" | "test-results" | "npm" | "types-check"
        )
        || (name.starts_with("package") && name.ends_with(".json"))
}

/// Limits of a directory scan, so a `--web-dir` pointed at a large tree stays cheap; files
/// beyond them are still served, unversioned.
const SCAN_MAX_DEPTH: usize = 8;
const SCAN_MAX_FILES: usize = 2_000;
const SCAN_MAX_FILE_BYTES: u64 = 64 << 20;
const SCAN_MAX_TOTAL_BYTES: u64 = 256 << 20;

/// Where pages and assets come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A directory on disk (`--web-dir`).
    Disk(PathBuf),
    /// The copy built into the binary.
    Embedded,
}

/// The pages and assets, with the versioned copy of the assets.
#[derive(Debug)]
pub struct Assets {
    source: Source,
    /// The current versioned copy; empty (no version) until the first page or versioned
    /// request asks for it.
    versioned: RwLock<Arc<Versioned>>,
}

/// The assets at one version: every file except the pages, by path relative to the web root.
#[derive(Debug, Default)]
struct Versioned {
    /// Hex digest over every file's path and bytes; empty when there are no files.
    version: String,
    files: HashMap<String, Arc<Asset>>,
}

/// One asset's bytes and its compressed copies.
struct Asset {
    bytes: Bytes,
    content_type: HeaderValue,
    /// Weak: one validator for the identity and the compressed copies, which are the same
    /// content (the brotli copy's bytes change when the best quality replaces the quick one).
    etag: HeaderValue,
    digest: [u8; 32],
    /// Length and modification time, to reuse the entry (and its compressed copies) when a
    /// rescan finds the file unchanged.
    stamp: Option<(u64, SystemTime)>,
    compressible: bool,
    br: OnceLock<watch::Receiver<Encoded>>,
    gzip: OnceLock<watch::Receiver<Encoded>>,
}

/// A compressed copy: `None` while the first one is being made, then `Some(None)` if
/// compressing does not make the file smaller.
type Encoded = Option<Option<Bytes>>;

impl fmt::Debug for Asset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Asset")
            .field("len", &self.bytes.len())
            .field("content_type", &self.content_type)
            .field("etag", &self.etag)
            .finish_non_exhaustive()
    }
}

impl Asset {
    fn new(path: &str, bytes: Bytes, digest: [u8; 32], stamp: Option<(u64, SystemTime)>) -> Asset {
        let mime = mime_guess::from_path(path).first_or_octet_stream();
        let compressible = compressible(mime.essence_str());
        let content_type = HeaderValue::from_str(mime.as_ref())
            .unwrap_or(HeaderValue::from_static("application/octet-stream"));
        let etag = HeaderValue::from_str(&format!("W/\"{}\"", hex(&digest[..12])))
            .expect("hex is a valid header value");
        Asset {
            bytes,
            content_type,
            etag,
            digest,
            stamp,
            compressible,
            br: OnceLock::new(),
            gzip: OnceLock::new(),
        }
    }

    /// The copy compressed with `coding`, made on a blocking thread the first time it is
    /// asked for and kept; `None` if compressing does not make the file smaller.
    async fn encoded(self: &Arc<Self>, coding: Coding) -> Option<Bytes> {
        let slot = match coding {
            Coding::Br => &self.br,
            Coding::Gzip => &self.gzip,
        };
        let mut copy = slot
            .get_or_init(|| {
                let (tx, rx) = watch::channel(None);
                let asset = Arc::clone(self);
                tokio::task::spawn_blocking(move || {
                    for &level in coding.levels() {
                        let out = coding.compress(&asset.bytes, level);
                        let smaller = (out.len() < asset.bytes.len()).then(|| Bytes::from(out));
                        tx.send_replace(Some(smaller));
                    }
                });
                rx
            })
            .clone();
        // An error means the compression thread panicked: serve the file as it is.
        let ready = copy.wait_for(Option::is_some).await.ok()?;
        ready.clone().flatten()
    }
}

/// Whether a type is worth compressing (text, scripts, wasm, JSON, SVG).
fn compressible(essence: &str) -> bool {
    essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(
            essence,
            "application/javascript" | "application/json" | "application/wasm" | "application/xml"
        )
}

/// A content coding the server keeps compressed copies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    Br,
    Gzip,
}

impl Coding {
    fn name(self) -> &'static str {
        match self {
            Coding::Br => "br",
            Coding::Gzip => "gzip",
        }
    }

    /// Qualities made in turn, each replacing the copy before: brotli's best (11) takes ~1 s
    /// for the 350 KB wasm bundle, so a quick one (5, ~26 ms) serves the requests until then.
    fn levels(self) -> &'static [u32] {
        match self {
            Coding::Br => &[5, 11],
            Coding::Gzip => &[9],
        }
    }

    fn compress(self, data: &[u8], level: u32) -> Vec<u8> {
        match self {
            Coding::Br => {
                let params = brotli::enc::BrotliEncoderParams {
                    quality: i32::try_from(level).unwrap_or(11),
                    size_hint: data.len(),
                    ..Default::default()
                };
                let mut out = Vec::with_capacity(data.len() / 2);
                // Reading a slice and writing a Vec cannot fail.
                let _ = brotli::BrotliCompress(&mut &data[..], &mut out, &params);
                out
            }
            Coding::Gzip => {
                let mut enc = flate2::write::GzEncoder::new(
                    Vec::with_capacity(data.len() / 2),
                    flate2::Compression::new(level),
                );
                let _ = enc.write_all(data);
                enc.finish().unwrap_or_default()
            }
        }
    }

    /// The coding the request prefers among those kept (`br` over `gzip` at equal weight),
    /// from `Accept-Encoding` with its q-values; `None` for the identity.
    fn preferred(headers: &HeaderMap) -> Option<Coding> {
        let (mut br, mut gzip, mut any) = (None, None, None);
        for value in headers.get_all(header::ACCEPT_ENCODING) {
            let Ok(value) = value.to_str() else { continue };
            for item in value.split(',') {
                let mut parts = item.split(';');
                let name = parts.next().unwrap_or_default().trim();
                let q = parts
                    .filter_map(|p| p.trim().split_once('='))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
                    .map_or(1.0, |(_, q)| q.trim().parse::<f32>().unwrap_or(0.0));
                if name.eq_ignore_ascii_case("br") {
                    br = Some(q);
                } else if name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip") {
                    gzip = Some(q);
                } else if name == "*" {
                    any = Some(q);
                }
            }
        }
        let br = br.or(any).unwrap_or(0.0);
        let gzip = gzip.or(any).unwrap_or(0.0);
        if br > 0.0 && br >= gzip {
            Some(Coding::Br)
        } else if gzip > 0.0 {
            Some(Coding::Gzip)
        } else {
            None
        }
    }
}

/// Marks a response whose encoding was already chosen here, for [`compression`] to pass.
#[derive(Debug, Clone, Copy)]
struct Negotiated;

fn not_negotiated(_: StatusCode, _: Version, _: &HeaderMap, extensions: &Extensions) -> bool {
    extensions.get::<Negotiated>().is_none()
}

/// A predicate on a response's parts.
pub type PartsPredicate = fn(StatusCode, Version, &HeaderMap, &Extensions) -> bool;

/// The predicate of [`compression`].
pub type CompressWhen = And<DefaultPredicate, PartsPredicate>;

/// Brotli or gzip by `Accept-Encoding`, on the fly (brotli quality 4, gzip 6), for the pages
/// and the unversioned assets; versioned assets come with their kept compressed copy and pass
/// through.
pub fn compression() -> CompressionLayer<CompressWhen> {
    CompressionLayer::new()
        .br(true)
        .gzip(true)
        .compress_when(DefaultPredicate::new().and(not_negotiated as PartsPredicate))
}

fn hex(bytes: &[u8]) -> String {
    use fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

impl Assets {
    /// Assets from `source`; nothing is read until the first request.
    pub fn new(source: Source) -> Assets {
        Assets {
            source,
            versioned: RwLock::new(Arc::default()),
        }
    }

    fn current(&self) -> Arc<Versioned> {
        Arc::clone(&self.versioned.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The directory the versioned copy is made from and refreshed against, if it can
    /// change: `--web-dir`, or the repository's `web/` in debug builds.
    fn watched_dir(&self) -> Option<PathBuf> {
        match &self.source {
            Source::Disk(dir) => Some(dir.clone()),
            Source::Embedded if cfg!(debug_assertions) => Some(PathBuf::from(EMBEDDED_DIR)),
            Source::Embedded => None,
        }
    }

    /// The versioned copy, brought up to date with the files (made at the first call; for a
    /// directory, rescanned: a directory walk of `stat`s, reading only changed files).
    async fn refreshed(&self) -> Arc<Versioned> {
        let old = self.current();
        let new = match self.watched_dir() {
            Some(dir) => {
                let prev = Arc::clone(&old);
                match tokio::task::spawn_blocking(move || scan_dir(&dir, &prev)).await {
                    Ok(new) => new,
                    Err(_) => return old,
                }
            }
            None if !old.version.is_empty() => return old,
            None => embedded_files(),
        };
        if new.version != old.version && !new.version.is_empty() {
            tracing::debug!(version = %new.version, files = new.files.len(), "assets versioned");
        }
        // Kept even at the same version: the entries carry the files' new stamps.
        let new = Arc::new(new);
        *self.versioned.write().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&new);
        new
    }

    /// A page, its asset URLs rewritten to the current version; `no-cache`.
    async fn page(&self, name: &str, headers: &HeaderMap) -> Response {
        let html = match &self.source {
            Source::Disk(dir) => tokio::fs::read(dir.join(name)).await.ok(),
            Source::Embedded => Embedded::get(name).map(|f| f.data.into_owned()),
        };
        let Some(html) = html else {
            return (StatusCode::NOT_FOUND, "not found").into_response();
        };
        let versioned = self.refreshed().await;
        let body = match String::from_utf8(html) {
            Ok(text) => rewrite_page(&text, &versioned).into_bytes(),
            Err(not_text) => not_text.into_bytes(),
        };
        let etag = format!("W/\"{}\"", hex(&Sha256::digest(&body)[..12]));
        let etag = HeaderValue::from_str(&etag).expect("hex is a valid header value");
        let mut res = if matches_etag(headers, &etag) {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/html; charset=utf-8"),
                )],
                body,
            )
                .into_response()
        };
        let h = res.headers_mut();
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_CACHE));
        h.insert(header::ETAG, etag);
        res
    }

    /// A file by its path relative to the web root, unversioned: `no-cache`.
    async fn unversioned(&self, req: Request) -> Response {
        match &self.source {
            // ServeDir rejects `..` and other escapes from the directory.
            Source::Disk(dir) => match ServeDir::new(dir).oneshot(req).await {
                Ok(mut res) => {
                    res.headers_mut()
                        .insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_CACHE));
                    res.into_response()
                }
                Err(never) => match never {},
            },
            Source::Embedded => {
                let path = req.uri().path().trim_start_matches('/');
                if path.is_empty() || path.ends_with('/') {
                    embedded(&format!("{path}index.html"))
                } else {
                    embedded(path)
                }
            }
        }
    }
}

/// Whether `If-None-Match` names `etag` (weak comparison) or is `*`.
fn matches_etag(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    let bare = |t: &str| t.trim().trim_start_matches("W/").to_owned();
    let Ok(ours) = etag.to_str() else {
        return false;
    };
    let ours = bare(ours);
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim() == "*" || bare(t) == ours)
}

/// The versioned copy of the embedded files (release builds: their digests were computed at
/// build time).
fn embedded_files() -> Versioned {
    let mut found = BTreeMap::new();
    for path in Embedded::iter() {
        if path.ends_with(".html") {
            continue;
        }
        let Some(file) = Embedded::get(&path) else {
            continue;
        };
        let bytes = match file.data {
            std::borrow::Cow::Borrowed(b) => Bytes::from_static(b),
            std::borrow::Cow::Owned(v) => Bytes::from(v),
        };
        let digest = file.metadata.sha256_hash();
        found.insert(
            path.to_string(),
            Arc::new(Asset::new(&path, bytes, digest, None)),
        );
    }
    version_of(found)
}

/// Scans `dir` for assets, reusing the entries of `prev` whose files did not change.
fn scan_dir(dir: &FsPath, prev: &Versioned) -> Versioned {
    let mut paths = Vec::new();
    walk(dir, "", 0, &mut paths);
    let mut found = BTreeMap::new();
    let mut total = 0u64;
    for (rel, full, stamp) in paths {
        if found.len() >= SCAN_MAX_FILES || total + stamp.0 > SCAN_MAX_TOTAL_BYTES {
            tracing::debug!(dir = %dir.display(), "asset scan limit reached; the rest is served unversioned");
            break;
        }
        total += stamp.0;
        let asset = match prev.files.get(&rel) {
            Some(old) if old.stamp == Some(stamp) => Arc::clone(old),
            _ => match std::fs::read(&full) {
                Ok(bytes) => {
                    let digest = Sha256::digest(&bytes).into();
                    // The length read, so a file written meanwhile is read again next time.
                    let stamp = (bytes.len() as u64 == stamp.0).then_some(stamp);
                    Arc::new(Asset::new(&rel, Bytes::from(bytes), digest, stamp))
                }
                Err(_) => continue,
            },
        };
        found.insert(rel, asset);
    }
    version_of(found)
}

/// Files under `dir` (relative path with `/`, full path, length and modification time),
/// except pages and [`skipped`] names.
fn walk(
    dir: &FsPath,
    rel: &str,
    depth: usize,
    out: &mut Vec<(String, PathBuf, (u64, SystemTime))>,
) {
    if depth > SCAN_MAX_DEPTH || out.len() >= SCAN_MAX_FILES {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if skipped(&name) {
            continue;
        }
        let full = entry.path();
        // Follows symlinks, as ServeDir does.
        let Ok(meta) = std::fs::metadata(&full) else {
            continue;
        };
        let rel = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if meta.is_dir() {
            walk(&full, &rel, depth + 1, out);
        } else if meta.is_file() && !name.ends_with(".html") && meta.len() <= SCAN_MAX_FILE_BYTES {
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            out.push((rel, full, (meta.len(), modified)));
        }
    }
}

/// The version of a set of files: a digest over every path and its bytes' digest.
fn version_of(files: BTreeMap<String, Arc<Asset>>) -> Versioned {
    if files.is_empty() {
        return Versioned::default();
    }
    let mut hash = Sha256::new();
    for (path, asset) in &files {
        hash.update(path.as_bytes());
        hash.update([0]);
        hash.update(asset.digest);
    }
    Versioned {
        version: hex(&hash.finalize()[..8]),
        files: files.into_iter().collect(),
    }
}

/// `page` with every `src="/…"` and `href="/…"` naming an asset of `v` pointed at its
/// versioned URL, and an import map doing the same for the scripts' imports (inserted before
/// the first `<link` or `<script`: an import map must come before anything loading a module).
fn rewrite_page(page: &str, v: &Versioned) -> String {
    if v.version.is_empty() {
        return page.to_owned();
    }
    let mut out = String::with_capacity(page.len() + 512);
    let mut rest = page;
    if let Some(first) = ["<link", "<script"]
        .iter()
        .filter_map(|tag| page.find(tag))
        .min()
    {
        // On a line of its own, indented as the tag it precedes.
        let line_start = page[..first].rfind('\n').map_or(0, |i| i + 1);
        let indent = &page[line_start..first];
        let indent = if indent.trim().is_empty() { indent } else { "" };
        out.push_str(&page[..first]);
        out.push_str(&import_map(v));
        out.push('\n');
        out.push_str(indent);
        rest = &page[first..];
    }
    loop {
        let next = ["src=", "href="]
            .iter()
            .filter_map(|attr| rest.find(attr).map(|i| i + attr.len()))
            .min();
        let Some(value) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..value]);
        rest = &rest[value..];
        let Some(quote) = rest.chars().next().filter(|q| matches!(q, '"' | '\'')) else {
            continue;
        };
        let Some(len) = rest[1..].find(quote) else {
            continue;
        };
        let url = &rest[1..1 + len];
        out.push(quote);
        match versioned_url(url, v) {
            Some(new) => out.push_str(&new),
            None => out.push_str(url),
        }
        out.push(quote);
        rest = &rest[len + 2..];
    }
}

/// `/path?query` → `/v/{version}/path?query` when `path` is an asset of `v`.
fn versioned_url(url: &str, v: &Versioned) -> Option<String> {
    let path = url.strip_prefix('/').filter(|p| !p.starts_with('/'))?;
    let end = path.find(['?', '#']).unwrap_or(path.len());
    v.files
        .contains_key(&path[..end])
        .then(|| format!("{VERSIONED_PREFIX}{}/{path}", v.version))
}

/// `<script type="importmap">` mapping each script's unversioned URL to its versioned one.
fn import_map(v: &Versioned) -> String {
    let imports: BTreeMap<String, String> = v
        .files
        .keys()
        .filter(|p| p.ends_with(".js") || p.ends_with(".mjs"))
        .map(|p| {
            (
                format!("/{p}"),
                format!("{VERSIONED_PREFIX}{}/{p}", v.version),
            )
        })
        .collect();
    let json = serde_json::json!({ "imports": imports }).to_string();
    // Nothing in the JSON may end the script element.
    let json = json.replace("</", "<\\/");
    format!("<script type=\"importmap\">{json}</script>")
}

fn embedded(path: &str) -> Response {
    match Embedded::get(path) {
        Some(file) => (
            [
                (header::CONTENT_TYPE, file.metadata.mimetype().to_owned()),
                (header::CACHE_CONTROL, NO_CACHE.to_owned()),
            ],
            Body::from(file.data.into_owned()),
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

/// `/`: create or join a room.
pub async fn index(State(app): State<AppState>, headers: HeaderMap) -> Response {
    app.assets.page("index.html", &headers).await
}

/// `/new`: a fresh room with a generated name.
pub async fn new_room() -> Redirect {
    Redirect::to(&format!("/room/{:08x}", rand::random::<u32>()))
}

/// `/room/{name}`: the player page.
pub async fn room(
    State(app): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    match validate_room_name(&name) {
        Ok(()) => app.assets.page("room.html", &headers).await,
        Err(err) => (StatusCode::BAD_REQUEST, err.to_string()).into_response(),
    }
}

/// `/room/{name}/dashboard`: one room's live dashboard.
pub async fn room_dashboard(
    State(app): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    match validate_room_name(&name) {
        Ok(()) => app.assets.page("dashboard.html", &headers).await,
        Err(err) => (StatusCode::BAD_REQUEST, err.to_string()).into_response(),
    }
}

/// `/dashboard`: all rooms.
pub async fn dashboard(State(app): State<AppState>, headers: HeaderMap) -> Response {
    app.assets.page("dashboard.html", &headers).await
}

/// `/v/{version}/{path}`: an asset at the current version, `immutable`, in the encoding the
/// request prefers. Any other version, or a file the version does not hold, is served as the
/// unversioned `/{path}` (`no-cache`), so a page from before a deploy still loads.
pub async fn versioned(State(app): State<AppState>, mut req: Request) -> Response {
    let rest = req
        .uri()
        .path()
        .strip_prefix(VERSIONED_PREFIX)
        .unwrap_or_default();
    let (version, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut current = app.assets.current();
    if version != current.version {
        // Not made yet (a fresh process) or the files changed since.
        current = app.assets.refreshed().await;
    }
    if version == current.version
        && let Some(asset) = current.files.get(path)
    {
        return serve_versioned(asset, req.headers()).await;
    }
    let query = req
        .uri()
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    match PathAndQuery::try_from(format!("/{path}{query}")) {
        Ok(pq) => {
            let mut parts = req.uri().clone().into_parts();
            parts.path_and_query = Some(pq);
            match Uri::from_parts(parts) {
                Ok(uri) => *req.uri_mut() = uri,
                Err(_) => return (StatusCode::NOT_FOUND, "not found").into_response(),
            }
        }
        Err(_) => return (StatusCode::NOT_FOUND, "not found").into_response(),
    }
    app.assets.unversioned(req).await
}

async fn serve_versioned(asset: &Arc<Asset>, headers: &HeaderMap) -> Response {
    let mut res = if matches_etag(headers, &asset.etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let coding = Coding::preferred(headers).filter(|_| asset.compressible);
        let encoded = match coding {
            Some(coding) => asset.encoded(coding).await.map(|b| (coding, b)),
            None => None,
        };
        let mut res = match encoded {
            Some((coding, bytes)) => (
                [(
                    header::CONTENT_ENCODING,
                    HeaderValue::from_static(coding.name()),
                )],
                Body::from(bytes),
            )
                .into_response(),
            None => Body::from(asset.bytes.clone()).into_response(),
        };
        res.headers_mut()
            .insert(header::CONTENT_TYPE, asset.content_type.clone());
        res
    };
    let h = res.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
    h.insert(header::ETAG, asset.etag.clone());
    if asset.compressible {
        h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    res.extensions_mut().insert(Negotiated);
    res
}

/// Adds `--static` directory `mount` to `router`: `/PATH` redirects to `/PATH/` (so the
/// page's relative URLs resolve inside it), and `/PATH/{file}` serves the file, `no-cache`.
pub fn mount_static(router: axum::Router<AppState>, mount: &StaticDir) -> axum::Router<AppState> {
    let path = mount.path.clone();
    let dir = Arc::new(mount.dir.clone());
    let under = path.len();
    let serve = move |req: Request| {
        let dir = Arc::clone(&dir);
        async move { static_file(&dir, under, req).await }
    };
    router
        .route(
            &path,
            get(move |uri: Uri| async move {
                let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
                Redirect::permanent(&format!("{}/{query}", uri.path()))
            }),
        )
        .route(&format!("{path}/"), get(serve.clone()))
        .route(&format!("{path}/{{*file}}"), get(serve))
}

/// A file of a `--static` directory: the request's path after its first `under` bytes (the
/// mount's path), a directory's `index.html`; hidden names are not found.
async fn static_file(dir: &FsPath, under: usize, mut req: Request) -> Response {
    let path = req.uri().path().get(under..).unwrap_or("/").to_owned();
    // Decoded as ServeDir decodes it: `%2e` is a dot too.
    let hidden = path
        .split('/')
        .any(|s| s.starts_with('.') || s.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("%2e")));
    let path = if path.ends_with('/') {
        format!("{path}index.html")
    } else {
        path
    };
    let query = req
        .uri()
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let Ok(uri) = Uri::try_from(format!("{path}{query}")) else {
        return (StatusCode::NOT_FOUND, "not found").into_response();
    };
    if hidden {
        return (StatusCode::NOT_FOUND, "not found").into_response();
    }
    *req.uri_mut() = uri;
    // ServeDir rejects `..` and other escapes from the directory; a directory named without
    // its trailing slash is not found (its redirect would not know the mount's path).
    let serve = ServeDir::new(dir).append_index_html_on_directories(false);
    match serve.oneshot(req).await {
        Ok(mut res) => {
            res.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_CACHE));
            res.into_response()
        }
        Err(never) => match never {},
    }
}

/// Everything else: static files (`/pkg/*`, `/vendor/*`, scripts, styles), unversioned.
pub async fn asset(State(app): State<AppState>, req: Request) -> Response {
    app.assets.unversioned(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap(),
        );
        h
    }

    #[test]
    fn accept_encoding_picks_br_then_gzip_and_honours_q_zero() {
        assert_eq!(Coding::preferred(&HeaderMap::new()), None);
        assert_eq!(
            Coding::preferred(&accept("gzip, deflate, br, zstd")),
            Some(Coding::Br)
        );
        assert_eq!(Coding::preferred(&accept("gzip")), Some(Coding::Gzip));
        assert_eq!(
            Coding::preferred(&accept("br;q=0, gzip")),
            Some(Coding::Gzip)
        );
        assert_eq!(
            Coding::preferred(&accept("br;q=0.5, gzip;q=0.8")),
            Some(Coding::Gzip)
        );
        assert_eq!(Coding::preferred(&accept("identity")), None);
        assert_eq!(Coding::preferred(&accept("*")), Some(Coding::Br));
        assert_eq!(Coding::preferred(&accept("*;q=0")), None);
        assert_eq!(Coding::preferred(&accept("deflate")), None);
    }

    fn assets(paths: &[&str]) -> Versioned {
        version_of(
            paths
                .iter()
                .map(|p| {
                    let bytes = Bytes::from(p.to_string());
                    let digest = Sha256::digest(&bytes).into();
                    (p.to_string(), Arc::new(Asset::new(p, bytes, digest, None)))
                })
                .collect(),
        )
    }

    #[test]
    fn pages_point_at_versioned_assets_and_map_imports() {
        let v = assets(&["style.css", "room.js", "pkg/a.js", "pkg/a_bg.wasm"]);
        let page = "<html><head lang=\"x\">\n  <link rel=\"stylesheet\" href=\"/style.css\">\
            <link rel=\"preload\" href='/pkg/a_bg.wasm?x=1#f'>\
            <a href=\"/\">home</a><a href=\"/new\">new</a><img src=\"//cdn/style.css\">\
            </head><body><script type=\"module\" src=\"/room.js\"></script></body></html>";
        let out = rewrite_page(page, &v);
        let ver = &v.version;
        assert_eq!(ver.len(), 16);
        for expected in [
            format!("href=\"/v/{ver}/style.css\""),
            format!("href='/v/{ver}/pkg/a_bg.wasm?x=1#f'"),
            format!("src=\"/v/{ver}/room.js\""),
            "href=\"/\"".to_owned(),
            "href=\"/new\"".to_owned(),
            "src=\"//cdn/style.css\"".to_owned(),
            format!(
                "<head lang=\"x\">\n  <script type=\"importmap\">{{\"imports\":{{\"/pkg/a.js\":\"/v/{ver}/pkg/a.js\",\"/room.js\":\"/v/{ver}/room.js\"}}}}</script>\n  <link rel"
            ),
        ] {
            assert!(out.contains(&expected), "{expected} not in {out}");
        }
        assert_eq!(rewrite_page(page, &Versioned::default()), page);
    }

    #[test]
    fn the_version_changes_with_any_file_and_only_then() {
        let a = assets(&["a.js", "b.css"]).version;
        assert_eq!(a, assets(&["b.css", "a.js"]).version);
        assert_ne!(a, assets(&["a.js", "b.css", "c.wasm"]).version);
        assert_ne!(a, assets(&["a.js", "c.css"]).version);
    }
}
