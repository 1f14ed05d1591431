//! The flags every command shares and the error of a flag value the peer refuses. They sit
//! below both the command line ([`cli`](crate::cli), which re-exports them) and the room
//! player (`room`), whose `join` flags carry them too, so neither reaches into the other.

use std::io::IsTerminal;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ackwire_core::emulator::EmulatorConfig;
use clap::Args;

use crate::link::EmulationOptions;
use crate::report::Output;

/// Flags shared by both subcommands.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// One JSON stats object per second on stdout, then a final summary line.
    #[arg(long)]
    pub json: bool,
    /// Emulated one-way latency added in each direction of this peer's link.
    #[arg(long, value_name = "MS", default_value_t = 0.0)]
    pub latency: f64,
    /// Emulated jitter: each datagram's delay varies within latency ± jitter.
    #[arg(long, value_name = "MS", default_value_t = 0.0)]
    pub jitter: f64,
    /// Emulated loss in each direction, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 0.0)]
    pub loss: f64,
    /// Seed of the link emulator (default: from the clock; logged so a run can be replayed).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Keep the link perfect for this many seconds, then apply the emulation flags.
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    pub impair_after: f64,
    /// Turn encryption off: no key exchange, packets in plaintext, for debugging with a
    /// packet capture. The other side must run --insecure too.
    #[arg(long)]
    pub insecure: bool,
}

/// A flag value the peer refuses.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArgError {
    /// A duration flag is negative, not a number, or too large.
    #[error("--{flag} must be a finite, non-negative number (got {value})")]
    BadDuration {
        /// The flag.
        flag: &'static str,
        /// Its value.
        value: f64,
    },
    /// A duration flag that must be more than zero is zero.
    #[error("--{flag} must be more than 0 seconds")]
    Zero {
        /// The flag.
        flag: &'static str,
    },
    /// `join` runs the room driver (`crate::room`), which has no UDP peer options.
    #[error("`join` runs the room driver, not the UDP peer loop")]
    NotAUdpPeer,
    /// The listener's key file could not be read or created.
    #[error("{0}")]
    Key(#[from] crate::keys::KeyError),
}

/// A flag's `value` in `unit`s of a second, refused as [`ArgError::BadDuration`] when it is no
/// duration.
pub(crate) fn duration(flag: &'static str, value: f64, unit: f64) -> Result<Duration, ArgError> {
    Duration::try_from_secs_f64(value * unit).map_err(|_| ArgError::BadDuration { flag, value })
}

impl CommonArgs {
    pub(crate) fn emulation(&self) -> Result<Option<EmulationOptions>, ArgError> {
        let config = EmulatorConfig::default()
            .with_latency(duration("latency", self.latency, 1e-3)?)
            .with_jitter(duration("jitter", self.jitter, 1e-3)?)
            .with_loss_percent(self.loss);
        if config == EmulatorConfig::default() {
            return Ok(None);
        }
        let seed = self.seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        tracing::info!(seed, "link emulation on");
        Ok(Some(EmulationOptions {
            config,
            seed,
            impair_after: duration("impair-after", self.impair_after, 1.0)?,
        }))
    }

    pub(crate) fn output(&self) -> Output {
        if self.json {
            Output::Json
        } else if std::io::stdout().is_terminal() {
            Output::Live
        } else {
            Output::Plain
        }
    }
}
