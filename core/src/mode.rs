//! The two sending modes of binary congestion avoidance. They stand apart from
//! [`congestion`](crate::congestion) because the [`Config`](crate::Config) names one (its
//! initial mode) and the congestion controller is built from a `Config`: here, both use them
//! and neither reaches up to the other. Their public path is `congestion::Mode` (and `Mode`).

use serde::{Deserialize, Serialize};

/// The two sending modes. The default is `Bad`, the mode a link starts in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Conditions are good: send at the good rate (30 pps by default).
    Good,
    /// Conditions are bad, or have not been good for long enough: send at the bad rate.
    #[default]
    Bad,
}
