//! What an application declares in its join: its id, version and channel layout.

use serde::{Deserialize, Serialize};

use crate::is_valid_name;

/// The application a member plays, as it declares it in its join: an id, a version and its
/// channel layout. A room plays one application: the server refuses a join whose
/// declaration differs from the room's (`app_mismatch`), so members of different games, or of
/// incompatible releases of one game, never meet.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AppInfo {
    /// The application's id: 1–64 of `A-Z a-z 0-9 - _` ([`is_valid_name`]).
    pub id: String,
    /// Its protocol version: bump it with every release that cannot talk to the last.
    pub version: u32,
    /// Its channels, by index: 1 to [`AppInfo::MAX_CHANNELS`] kinds.
    pub channels: Vec<ChannelKind>,
}

/// Why an [`AppInfo`] is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidApp {
    /// The id breaks the name rule.
    #[error("application id \"{0}\": use {rule}", rule = crate::NAME_RULE)]
    Id(String),
    /// No channels, or more than [`AppInfo::MAX_CHANNELS`].
    #[error("{0} channels declared; 1 to {max} are allowed", max = AppInfo::MAX_CHANNELS)]
    ChannelCount(usize),
    /// An application in a URL without its `app_version`.
    #[error("an application needs its version (app_version)")]
    NoVersion,
    /// A channel list in a URL that is not comma-separated channel kinds.
    #[error(
        "channel \"{0}\" is not one of unreliable, unreliable-sequenced, reliable-ordered, reliable-unordered"
    )]
    ChannelKind(String),
}

impl AppInfo {
    /// Most channels an application declares: the core carries 64 per connection, and the
    /// room member keeps one for itself (`docs/wire.md`, "Room members").
    pub const MAX_CHANNELS: usize = 63;

    /// An application with this id, version and channel layout.
    pub fn new(id: impl Into<String>, version: u32, channels: impl Into<Vec<ChannelKind>>) -> Self {
        AppInfo {
            id: id.into(),
            version,
            channels: channels.into(),
        }
    }

    /// Checks the id and the channel count.
    pub fn validate(&self) -> Result<(), InvalidApp> {
        if !is_valid_name(&self.id) {
            return Err(InvalidApp::Id(self.id.chars().take(80).collect()));
        }
        if self.channels.is_empty() || self.channels.len() > Self::MAX_CHANNELS {
            return Err(InvalidApp::ChannelCount(self.channels.len()));
        }
        Ok(())
    }

    /// The channel list as a URL carries it: kinds by their wire names, comma-separated.
    pub fn channel_list(&self) -> String {
        self.channels
            .iter()
            .map(|kind| kind.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Reads [`channel_list`](Self::channel_list)'s form back.
    pub fn parse_channel_list(list: &str) -> Result<Vec<ChannelKind>, InvalidApp> {
        list.split(',')
            .map(|name| {
                ChannelKind::from_name(name)
                    .ok_or_else(|| InvalidApp::ChannelKind(name.chars().take(40).collect()))
            })
            .collect()
    }
}

impl std::fmt::Display for AppInfo {
    /// `pong v2 (channels: unreliable-sequenced, reliable-ordered)`: how refusals name it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} v{} (channels: ", self.id, self.version)?;
        for (i, kind) in self.channels.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{}", kind.as_str())?;
        }
        f.write_str(")")
    }
}

/// How a channel of the application delivers its messages, as a join declares it. The room
/// member runs each as the core's channel kind of the same name (`ackwire-core`'s
/// `ChannelKind`); the schema names them itself so that the signal server needs no core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ChannelKind {
    /// Sent once; may be lost and arrive in any order.
    Unreliable,
    /// Sent once; a message older than the newest one delivered is dropped, so the receiver
    /// never goes backwards (snapshots, inputs: newest wins).
    UnreliableSequenced,
    /// Delivered exactly once, in the order sent (events, chat, state changes).
    ReliableOrdered,
    /// Delivered exactly once, as soon as it arrives.
    ReliableUnordered,
}

impl ChannelKind {
    /// Every kind, in the order the protocol lists them.
    pub const ALL: [ChannelKind; 4] = [
        Self::Unreliable,
        Self::UnreliableSequenced,
        Self::ReliableOrdered,
        Self::ReliableUnordered,
    ];

    /// The wire name (`unreliable-sequenced`, ...): in a join's `app.channels` and a URL's
    /// `channels`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unreliable => "unreliable",
            Self::UnreliableSequenced => "unreliable-sequenced",
            Self::ReliableOrdered => "reliable-ordered",
            Self::ReliableUnordered => "reliable-unordered",
        }
    }

    /// Reads a wire name back; `None` for a name this version does not know.
    pub fn from_name(name: &str) -> Option<ChannelKind> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// True for the two reliable kinds.
    pub fn is_reliable(self) -> bool {
        matches!(self, Self::ReliableOrdered | Self::ReliableUnordered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PeerKind, UrlJoin};

    #[test]
    fn an_app_is_a_valid_name_and_one_to_63_known_channels() {
        let ok = AppInfo::new("pong_2-x", 1, [ChannelKind::Unreliable]);
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(
            ok.to_string(),
            "pong_2-x v1 (channels: unreliable)",
            "refusals name an app this way"
        );
        let bad_id = AppInfo::new("pong game", 1, [ChannelKind::Unreliable]);
        assert!(matches!(bad_id.validate(), Err(InvalidApp::Id(_))));
        let none = AppInfo::new("pong", 1, []);
        assert_eq!(none.validate(), Err(InvalidApp::ChannelCount(0)));
        let many = AppInfo::new("pong", 1, vec![ChannelKind::Unreliable; 64]);
        assert_eq!(many.validate(), Err(InvalidApp::ChannelCount(64)));
        assert_eq!(
            AppInfo::parse_channel_list("reliable-unordered,unreliable"),
            Ok(vec![
                ChannelKind::ReliableUnordered,
                ChannelKind::Unreliable
            ])
        );
        assert!(matches!(
            AppInfo::parse_channel_list("reliable,teleport"),
            Err(InvalidApp::ChannelKind(_))
        ));
        for kind in ChannelKind::ALL {
            let text = serde_json::to_string(&kind).unwrap();
            assert_eq!(
                text,
                format!("\"{}\"", kind.as_str()),
                "serde and the URL agree"
            );
            assert_eq!(ChannelKind::from_name(kind.as_str()), Some(kind));
        }
        // In a URL: an app without its channels is no app.
        let half = UrlJoin {
            app: Some("pong".into()),
            ..UrlJoin::new("lobby", PeerKind::Browser)
        };
        assert!(half.clone().into_frame().is_err());
        assert!(half.app_info().is_err());
        let unversioned = UrlJoin {
            app_version: None,
            ..UrlJoin::new("lobby", PeerKind::Browser).with_app(&ok)
        };
        assert_eq!(unversioned.app_info(), Err(InvalidApp::NoVersion));
    }
}
