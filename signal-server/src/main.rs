//! `ackwire-signal`: serves the player page and the wasm bundle.

use std::{net::SocketAddr, path::PathBuf};

use axum::{Router, routing::get};
use clap::Parser;
use tower_http::services::ServeDir;

#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Address to listen on.
    #[arg(long, env = "ACKWIRE_BIND", default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    /// Directory holding the page (`index.html`, scripts) and the wasm bundle under `pkg/`.
    #[arg(long, env = "ACKWIRE_WEB_DIR", default_value = "web")]
    web_dir: PathBuf,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .fallback_service(ServeDir::new(&args.web_dir));
    let listener = tokio::net::TcpListener::bind(args.bind).await?;
    tracing::info!(addr = %listener.local_addr()?, web_dir = %args.web_dir.display(), "listening");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
