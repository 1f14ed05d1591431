//! The steps that must be atomic across instances, as Lua scripts Redis runs whole. Each is a
//! `.lua` file beside this one, which says what it takes and answers; they are compiled in,
//! so a running server never reads them from disk.

use ackwire_signalling::PeerId;
use redis::{Script, ScriptInvocation};

use super::schema::{ROOMS_KEY, app_key, host_key, peers_key, topology_key};

/// The broker's scripts.
#[derive(Debug)]
pub(super) struct Scripts {
    /// A new peer's place in a room, within every limit instances share.
    pub(super) reserve: Script,
    /// A resume's takeover of a record, if it has not changed since it was read.
    pub(super) swap: Script,
    /// A peer's removal (see [`Scripts::removal`]).
    pub(super) remove: Script,
    /// The id counter raised past the ids this instance's peers hold.
    pub(super) raise: Script,
    /// The epoch, network-tag key and id counter of a Redis without state.
    pub(super) init: Script,
}

impl Scripts {
    pub(super) fn new() -> Scripts {
        Scripts {
            reserve: Script::new(include_str!("reserve.lua")),
            swap: Script::new(include_str!("swap.lua")),
            remove: Script::new(include_str!("remove.lua")),
            raise: Script::new(include_str!("raise.lua")),
            init: Script::new(include_str!("init.lua")),
        }
    }

    /// Every script, for loading into Redis: pipelines run scripts by their hash, so Redis
    /// must know them (again, if it restarted).
    pub(super) fn all(&self) -> [&Script; 5] {
        [
            &self.reserve,
            &self.swap,
            &self.remove,
            &self.raise,
            &self.init,
        ]
    }

    /// The `remove` script for `peer_id` of `room`: only if its record is still `only`, or
    /// whatever it is with `""`.
    pub(super) fn removal(&self, room: &str, peer_id: PeerId, only: &str) -> ScriptInvocation<'_> {
        let mut call = self.remove.prepare_invoke();
        call.key(peers_key(room))
            .key(ROOMS_KEY)
            .key(app_key(room))
            .key(topology_key(room))
            .key(host_key(room))
            .arg(peer_id)
            .arg(only)
            .arg(room);
        call
    }
}
