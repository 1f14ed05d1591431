//! The HTML pages and static assets: from a directory on disk, or embedded in the binary.

use std::path::PathBuf;

use axum::{
    body::Body,
    extract::{Path, Request, State},
    http::{StatusCode, Uri, header},
    response::{IntoResponse, Redirect, Response},
};
use rust_embed::RustEmbed;
use tower::ServiceExt;
use tower_http::services::{ServeDir, ServeFile};

use crate::{AppState, protocol::validate_room_name};

/// `web/` compiled into the binary (release builds; debug builds read the folder at run time).
#[derive(RustEmbed)]
#[folder = "../web/"]
#[exclude = "node_modules/**"]
#[exclude = "e2e/**"]
#[exclude = "package*.json"]
#[exclude = "test-results/**"]
struct Embedded;

/// Where pages and assets come from.
#[derive(Debug, Clone)]
pub enum Assets {
    /// A directory on disk (`--web-dir`).
    Disk(PathBuf),
    /// The copy built into the binary.
    Embedded,
}

impl Assets {
    /// Serve one file by its path relative to the web root, as the response to `req`.
    async fn serve(&self, path: &str, req: Request) -> Response {
        match self {
            Assets::Disk(dir) => match ServeFile::new(dir.join(path)).oneshot(req).await {
                Ok(res) => res.into_response(),
                Err(never) => match never {},
            },
            Assets::Embedded => embedded(path),
        }
    }
}

fn embedded(path: &str) -> Response {
    match Embedded::get(path) {
        Some(file) => (
            [
                (header::CONTENT_TYPE, file.metadata.mimetype().to_owned()),
                (header::CACHE_CONTROL, "no-cache".to_owned()),
            ],
            Body::from(file.data.into_owned()),
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

/// `/`: create or join a room.
pub async fn index(State(app): State<AppState>, req: Request) -> Response {
    app.assets.serve("index.html", req).await
}

/// `/new`: a fresh room with a generated name.
pub async fn new_room() -> Redirect {
    Redirect::to(&format!("/room/{:08x}", rand::random::<u32>()))
}

/// `/room/{name}`: the player page.
pub async fn room(State(app): State<AppState>, Path(name): Path<String>, req: Request) -> Response {
    match validate_room_name(&name) {
        Ok(()) => app.assets.serve("room.html", req).await,
        Err(err) => (StatusCode::BAD_REQUEST, err.to_string()).into_response(),
    }
}

/// `/room/{name}/dashboard`: one room's live dashboard.
pub async fn room_dashboard(
    State(app): State<AppState>,
    Path(name): Path<String>,
    req: Request,
) -> Response {
    match validate_room_name(&name) {
        Ok(()) => app.assets.serve("dashboard.html", req).await,
        Err(err) => (StatusCode::BAD_REQUEST, err.to_string()).into_response(),
    }
}

/// `/dashboard`: all rooms.
pub async fn dashboard(State(app): State<AppState>, req: Request) -> Response {
    app.assets.serve("dashboard.html", req).await
}

/// Everything else: static files (`/pkg/*`, `/vendor/*`, scripts, styles).
pub async fn asset(State(app): State<AppState>, uri: Uri, req: Request) -> Response {
    match app.assets.as_ref() {
        // ServeDir rejects `..` and other escapes from the directory.
        Assets::Disk(dir) => match ServeDir::new(dir).oneshot(req).await {
            Ok(res) => res.into_response(),
            Err(never) => match never {},
        },
        Assets::Embedded => {
            let path = uri.path().trim_start_matches('/');
            if path.is_empty() || path.ends_with('/') {
                embedded(&format!("{path}index.html"))
            } else {
                embedded(path)
            }
        }
    }
}
