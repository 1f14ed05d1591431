//! `ackwire-signal`: rooms, WebSocket signalling (`/ws`), pages, `/metrics` and live stats
//! fan-out for dashboards. The wire protocol is documented in `docs/signalling.md`.
//!
//! The binary is a thin wrapper around [`serve`]; tests call it on a `127.0.0.1:0` listener.

pub mod config;
pub mod error;
pub mod metrics;
pub mod pages;
pub mod protocol;
pub mod rooms;
pub mod session;

use std::{future::Future, sync::Arc, time::Duration};

use axum::{Router, http::header, response::IntoResponse, routing::get};
use tokio::{net::TcpListener, sync::watch};

pub use config::Config;
pub use error::SignalError;

use crate::{metrics::Metrics, pages::Assets, rooms::Hub};

/// Shared by every request handler.
#[derive(Debug, Clone)]
pub struct AppState {
    hub: Arc<Hub>,
    assets: Arc<Assets>,
    /// Flips to `true` when the server shuts down; sessions then close with "going away".
    shutdown: watch::Receiver<bool>,
}

/// The router: pages, assets, `/ws`, `/healthz`, `/metrics`.
pub fn app(config: Config, shutdown: watch::Receiver<bool>) -> Router {
    let assets = match &config.web_dir {
        Some(dir) => Assets::Disk(dir.clone()),
        None => Assets::Embedded,
    };
    let metrics = Arc::new(Metrics::default());
    let state = AppState {
        hub: Arc::new(Hub::new(Arc::new(config), metrics)),
        assets: Arc::new(assets),
        shutdown,
    };
    Router::new()
        .route("/", get(pages::index))
        .route("/new", get(pages::new_room))
        .route("/room/{name}", get(pages::room))
        .route("/room/{name}/dashboard", get(pages::room_dashboard))
        .route("/dashboard", get(pages::dashboard))
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics_text))
        .route("/ws", get(session::upgrade))
        .fallback(pages::asset)
        .with_state(state)
}

async fn metrics_text(
    axum::extract::State(app): axum::extract::State<AppState>,
) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.hub.metrics().render(),
    )
}

/// Serve on `listener` until `shutdown` resolves, then close every WebSocket with
/// "going away" and return.
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let router = app(config, stop_rx);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down");
            let _ = stop_tx.send(true);
            // Give sessions a moment to send their close frames.
            tokio::time::sleep(Duration::from_millis(100)).await;
        })
        .await
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
