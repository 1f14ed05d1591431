//! Where a connection is in its life. It stands apart from [`connection`](crate::connection)
//! because every [`Stats`](crate::Stats) snapshot carries it, and the stats sit below the
//! packet layer and the connection that fill them in: here, both use it and the stats need
//! not reach up. Its public path is `connection::ConnectionState` (and `ConnectionState`).

use serde::{Deserialize, Serialize};

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ConnectionState {
    /// Handshake under way (connector only).
    Connecting,
    /// Messages flow.
    Connected,
    /// Closed locally; disconnect packets are still being sent.
    Closing,
    /// Over; nothing more is sent or accepted.
    Closed,
}
