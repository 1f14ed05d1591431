//! The command line: `ackwire-peer listen` and `ackwire-peer connect ADDR`.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use ackwire_core::ConnectionConfig;
use clap::{Parser, Subcommand};

use ackwire_core::StaticKey;

use crate::connections::Security;
use crate::flags::duration;
pub use crate::flags::{ArgError, CommonArgs};
use crate::keys;
use crate::peer::{PeerOptions, Role};

/// Native ackwire peer over UDP. Logs go to stderr (filter with RUST_LOG, e.g. RUST_LOG=debug).
#[derive(Debug, Parser)]
#[command(name = "ackwire-peer", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Accept connections from other peers and echo their traffic.
    Listen {
        /// Address to serve on.
        #[arg(long, default_value = "127.0.0.1:40000")]
        bind: SocketAddr,
        /// Most simultaneous connections; datagrams from further new peers are dropped.
        #[arg(long, default_value_t = 10_000)]
        max_connections: usize,
        /// The listener's static key (its identity for encrypted links): read from FILE, or
        /// created there (mode 0600) when missing. Its fingerprint is logged at start, for
        /// connectors to pin. Without it, a new key at each start.
        #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
        key: Option<std::path::PathBuf>,
        /// Reporting and emulation flags.
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Connect to a listening peer and send demo traffic at the rate the core asks for.
    Connect {
        /// The listening peer's address.
        addr: SocketAddr,
        /// Local address; defaults to any address of ADDR's family, port chosen by the OS.
        #[arg(long)]
        bind: Option<SocketAddr>,
        /// The listener's key fingerprint (as `listen` logs it): connect only to a listener
        /// that proves it holds this key. Without it, the first key shown is trusted and
        /// logged (trust on first use).
        #[arg(long, value_name = "FINGERPRINT", conflicts_with = "insecure")]
        server_key: Option<crate::keys::Fingerprint>,
        /// Reporting and emulation flags.
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Join a room through a signalling server: browsers over WebRTC, natives over UDP.
    #[cfg(feature = "rooms")]
    Join(crate::room::JoinArgs),
    /// Host a room (a host room, which the first member creates): the demo's authoritative
    /// relay. Every client links to it alone; it forwards each client's dot and chat to the
    /// others, each tagged with its origin.
    #[cfg(feature = "rooms")]
    Host(crate::room::JoinArgs),
}

impl Command {
    /// The socket address to bind and the driver options this command asks for.
    pub fn options(&self) -> Result<(SocketAddr, PeerOptions), ArgError> {
        let (bind, role, common, security) = match self {
            Command::Listen {
                bind,
                max_connections,
                key,
                common,
            } => (
                *bind,
                Role::Listen {
                    max_connections: *max_connections,
                },
                common,
                if common.insecure {
                    Security::Off
                } else {
                    Security::Listener(listener_key(key.as_deref())?)
                },
            ),
            Command::Connect {
                addr,
                bind,
                server_key,
                common,
            } => {
                let any = match addr {
                    SocketAddr::V4(_) => SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
                    SocketAddr::V6(_) => SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)),
                };
                let security = if common.insecure {
                    Security::Off
                } else {
                    Security::Connector {
                        pinned: *server_key,
                    }
                };
                (
                    bind.unwrap_or(any),
                    Role::Connect { remote: *addr },
                    common,
                    security,
                )
            }
            #[cfg(feature = "rooms")]
            Command::Join(_) | Command::Host(_) => return Err(ArgError::NotAUdpPeer),
        };
        let coalesce = match role {
            Role::Listen { .. } => Some(crate::peer::READ_COALESCE),
            Role::Connect { .. } => None,
        };
        let options = PeerOptions {
            coalesce,
            role,
            config: ConnectionConfig::default(),
            emulation: common.emulation()?,
            duration: common
                .duration
                .map(|secs| duration("duration", secs, 1.0))
                .transpose()?,
            output: common.output(),
            security,
        };
        if common.insecure {
            tracing::warn!("encryption off (--insecure): packets travel in plaintext");
        }
        Ok((bind, options))
    }
}

/// The listener's static key: from `path` (created when missing), or new for this run; its
/// fingerprint logged either way, for connectors to pin.
fn listener_key(path: Option<&std::path::Path>) -> Result<StaticKey, ArgError> {
    let Some(path) = path else {
        let key = StaticKey::generate();
        tracing::info!(
            fingerprint = %keys::fingerprint(&key),
            "listener key (new at each start: keep one with --key FILE to let connectors pin it)"
        );
        return Ok(key);
    };
    let (key, created) = keys::load_or_create(path)?;
    tracing::info!(
        fingerprint = %keys::fingerprint(&key),
        file = %path.display(),
        created,
        "listener key"
    );
    Ok(key)
}
