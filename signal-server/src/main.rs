//! `ackwire-signal`: see the library crate and `docs/signalling.md`.

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let config = ackwire_signal::Config::parse();
    let bind = config.bind;
    let listener = match tokio::net::TcpListener::bind(bind).await {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("ackwire-signal: cannot listen on {bind}: {err}");
            return ExitCode::FAILURE;
        }
    };
    // `serve` logs "listening" once the TLS files (if any) are loaded.
    match ackwire_signal::serve(listener, config, ackwire_signal::shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("ackwire-signal: {err}");
            ExitCode::FAILURE
        }
    }
}
