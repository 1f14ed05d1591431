//! `ackwire-signal`: see the library crate and `docs/signalling.md`.

use clap::Parser;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let config = ackwire_signal::Config::parse();
    let listener = tokio::net::TcpListener::bind(config.bind).await?;
    let web = match &config.web_dir {
        Some(dir) => dir.display().to_string(),
        None => "(embedded)".to_owned(),
    };
    tracing::info!(addr = %listener.local_addr()?, web_dir = %web, "listening");
    ackwire_signal::serve(listener, config, ackwire_signal::shutdown_signal()).await
}
