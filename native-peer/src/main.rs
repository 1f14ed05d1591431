//! `ackwire-peer`: see `ackwire-peer --help`.

use std::io::IsTerminal;
use std::process::ExitCode;

use ackwire_peer::cli::Cli;
use ackwire_peer::connections::Ending;
use ackwire_peer::{link, peer};
use clap::Parser;
use tracing_subscriber::EnvFilter;

/// A listener allocates one small buffer per message received (the message event's bytes)
/// and frees it once echoed: mimalloc's thread-local free lists do that in a fraction of
/// glibc's instructions (measured in `native-peer/README.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        // Known-harmless warnings of the WebRTC stack are noise, not news: rtc_dtls warns about
        // every TLS extension a browser offers that it does not know ("Unsupported Extension
        // Type"), and rtc_ice's agent about pinging before the first remote candidate arrived
        // ("pingAllCandidates called with no candidate pairs"), which trickle ICE makes normal.
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,rtc_dtls::handshake=error,rtc_ice::agent=error".into()),
        )
        .init();
    let cli = Cli::parse();
    #[cfg(feature = "rooms")]
    match &cli.command {
        ackwire_peer::cli::Command::Join(join) => {
            return ackwire_peer::room::main(join, join.role.into());
        }
        ackwire_peer::cli::Command::Host(join) => {
            return ackwire_peer::room::main(join, ackwire::Role::Host);
        }
        _ => {}
    }
    let (bind, options) = match cli.command.options() {
        Ok(parsed) => parsed,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::from(2);
        }
    };
    // One thread is plenty: the loop is a single task, and a peer should not take every core.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let socket = link::bind(bind).map_err(|e| {
            tracing::error!("cannot bind {bind}: {e}");
        })?;
        peer::run(socket, options, peer::stop_signal())
            .await
            .map_err(|e| tracing::error!("{e}"))
    });
    match result {
        // A connect peer whose listener never answered, went silent or was refused failed at
        // its job.
        Ok(outcome)
            if matches!(
                outcome.ending,
                Ending::Unreachable | Ending::TimedOut | Ending::Refused
            ) =>
        {
            ExitCode::FAILURE
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(()) => ExitCode::FAILURE,
    }
}
