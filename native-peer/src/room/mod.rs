//! `ackwire-peer join URL`: a native player of the demo, built on the `ackwire` crate's
//! [`Room`](ackwire::Room) as any game would be: nothing here reaches below the public API.
//!
//! It joins the room as a native (raw UDP to other natives, WebRTC to browsers), circles its
//! dot on the position channel, greets each peer once when their link connects
//! (`hello from native peer N`), answers every chat line from a browser with `echo: <text>`,
//! and reports each link's stats once a second, as JSON lines (`--json`), a live terminal
//! view, or log lines. With `--role client` it joins a host room as a client: its one link
//! is to the host, and what the host relays carries each message's origin.
//!
//! `ackwire-peer host URL` hosts a host room instead: the demo's authoritative relay. It has
//! no dot of its own; it forwards each client's dot and chat to every other client
//! ([`demo::Relayed`]) and greets each client.
//!
//! - [`demo`]: the demo application (its id, channels, position bytes), shared with the page.
//! - [`bot`]: the loop around the room's events.

pub mod bot;
pub mod demo;

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::flags::{ArgError, CommonArgs};

/// `join` flags.
#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The room page's URL, e.g. http://127.0.0.1:8080/room/lobby.
    pub url: String,
    /// Local UDP address for links to other native peers. Default: every interface, a port
    /// chosen by the OS; `--bind 127.0.0.1:0` keeps the peer on this machine.
    #[arg(long, default_value = "0.0.0.0:0")]
    pub bind: SocketAddr,
    /// UDP address other natives send to (behind a NAT with a forwarded port: the public
    /// address). Default: the bound address, or with a wildcard `--bind` the address of the
    /// interface this machine reaches the signalling server through, with the bound port.
    #[arg(long, value_name = "IP:PORT")]
    pub advertise: Option<SocketAddr>,
    /// Local address WebRTC gathers ICE candidates on (port 0: any; a wildcard IP: every
    /// interface but loopback). Default: --bind's IP.
    #[arg(long, value_name = "IP:PORT")]
    pub ice_bind: Option<SocketAddr>,
    /// Public IP to put in WebRTC host candidates instead of the local one (1:1 NAT).
    #[arg(long, value_name = "IP")]
    pub public_ip: Option<IpAddr>,
    /// PEM certificates an https:// server's certificate must chain to, instead of the public
    /// roots: a private CA, or the server's own self-signed certificate.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// Pull the cable this many seconds after start: every datagram of every link is dropped
    /// (signalling stays up) for `--outage-for` seconds, so links are lost and recover, as in
    /// the page's "pull the cable" switch.
    #[arg(long, value_name = "SECS", requires = "outage_for")]
    pub outage_at: Option<f64>,
    /// How long the outage of `--outage-at` lasts.
    #[arg(long, value_name = "SECS", requires = "outage_at")]
    pub outage_for: Option<f64>,
    /// Say a chat line to every peer in the room every this many seconds (`line N from
    /// native PID`, reliable), for soaks: each line's outcome is a `said` JSON line.
    #[arg(long, value_name = "SECS")]
    pub chat_every: Option<f64>,
    /// A link not connected after this many seconds is lost (`timeout`: "could not connect
    /// within N s") and tried again. Default: 20.
    #[arg(long, value_name = "SECS")]
    pub attempt_timeout: Option<f64>,
    /// Declare another application than the demo (its id), e.g. to see the server refuse a
    /// room that plays the demo.
    #[arg(long, value_name = "ID", default_value = demo::APP_ID)]
    pub app: String,
    /// The declared application's version.
    #[arg(long, value_name = "N", default_value_t = demo::APP_VERSION)]
    pub app_version: u32,
    /// As a host: answer each client's WebRTC with a full stack per client (the `webrtc`
    /// crate: STUN, TURN, ~476 KiB each) instead of ICE-lite on one socket (~62 KiB each),
    /// for a host behind a NAT that clients cannot reach directly (docs/host-rooms.md).
    #[arg(long)]
    pub full_ice: bool,
    /// What this player is in the room: a mesh `peer`, or a host room's `client` (`host` is
    /// what `ackwire-peer host` runs). The room's first member decides which kind of room it
    /// is; the server refuses the other kind.
    #[arg(long, value_enum, default_value_t = RoleArg::Peer)]
    pub role: RoleArg,
    /// The join ticket the game's backend minted for this player, for a server that requires
    /// one (`ackwire-signal --ticket-secret-file`): for this room, role and application. A
    /// refused ticket (`ticket_missing`, `ticket_expired`, ...) ends `join` with exit code 1.
    /// Prefer the environment variable: flags show in `ps`. Default: none.
    #[arg(
        long,
        env = "ACKWIRE_TICKET",
        hide_env_values = true,
        value_name = "TICKET"
    )]
    pub ticket: Option<String>,
    /// `--role client`: link only with a host of this identity (its join ticket's). Default:
    /// the first host with an identity is pinned for the room's life; a host of another
    /// identity gets no link (a `host-refused` JSON line says why).
    #[arg(long, value_name = "IDENTITY")]
    pub host_identity: Option<String>,
    /// Reporting and emulation flags (emulation applies to each link, both directions).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `--role`: [`ackwire::Role`] on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoleArg {
    /// A member of a mesh room.
    Peer,
    /// A client of a host room.
    Client,
    /// The host of a host room (as `ackwire-peer host`).
    Host,
}

impl From<RoleArg> for ackwire::Role {
    fn from(role: RoleArg) -> ackwire::Role {
        match role {
            RoleArg::Peer => ackwire::Role::Peer,
            RoleArg::Client => ackwire::Role::Client,
            RoleArg::Host => ackwire::Role::Host,
        }
    }
}

/// Why `join` could not start or went on no longer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RoomError {
    /// A flag value is invalid.
    #[error(transparent)]
    Arg(#[from] ArgError),
    /// `--tls-ca` cannot be used: unreadable, no certificate in it, or an http:// room.
    #[error("--tls-ca {path}: {reason}")]
    TlsCa {
        /// The file given.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The room could not be joined (URL, configuration, socket).
    #[error(transparent)]
    Join(ackwire::JoinError),
    /// The server refused the room for good (another application plays it, say).
    #[error("the server refused the room: {message} ({code})")]
    Refused {
        /// The server's code.
        code: ackwire::ErrorCode,
        /// Its words.
        message: String,
    },
    /// The room stopped by itself: another program joined it in this one's place (the same
    /// identity, with a join ticket).
    #[error("the room stopped: {0}")]
    Stopped(String),
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

impl From<ackwire::JoinError> for RoomError {
    fn from(e: ackwire::JoinError) -> RoomError {
        match e {
            // The library names the option; the command line, its flag.
            ackwire::JoinError::TlsCa { path, reason } => RoomError::TlsCa { path, reason },
            other => RoomError::Join(other),
        }
    }
}

/// Runs `join` (or `host`: `role`) until Ctrl-C, SIGTERM or `--duration`; the exit code says
/// how it ended.
pub fn main(args: &JoinArgs, role: ackwire::Role) -> ExitCode {
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RoomError::Runtime)
        .and_then(|runtime| {
            runtime.block_on(async {
                let stop = async {
                    crate::peer::stop_signal().await;
                    tracing::info!("interrupted, leaving the room");
                };
                bot::run(args, role, stop).await
            })
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            match e {
                RoomError::Arg(_)
                | RoomError::TlsCa { .. }
                | RoomError::Join(
                    ackwire::JoinError::Url(_)
                    | ackwire::JoinError::Config(_)
                    | ackwire::JoinError::NothingToAdvertise { .. },
                ) => ExitCode::from(2),
                _ => ExitCode::FAILURE,
            }
        }
    }
}
