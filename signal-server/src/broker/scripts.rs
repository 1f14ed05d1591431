//! The steps that must be atomic across instances, as Lua scripts Redis runs whole. Each is a
//! `.lua` file beside this one, which says what it takes and answers; they are compiled in,
//! so a running server never reads them from disk.

use ackwire_signalling::{PeerId, Role};
use redis::{Script, ScriptInvocation};

use super::schema::{
    ROOMS_KEY, Record, app_key, host_key, identities_key, peers_key, room_channel, topology_key,
};

/// The broker's scripts.
#[derive(Debug)]
pub(super) struct Scripts {
    /// A new peer's place in a room, within every limit instances share.
    pub(super) reserve: Script,
    /// A resume's takeover of a record, if it has not changed since it was read.
    pub(super) swap: Script,
    /// A peer's record stored (see [`Scripts::storing`]).
    pub(super) put: Script,
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
            put: Script::new(include_str!("put.lua")),
            remove: Script::new(include_str!("remove.lua")),
            raise: Script::new(include_str!("raise.lua")),
            init: Script::new(include_str!("init.lua")),
        }
    }

    /// Every script, for loading into Redis: pipelines run scripts by their hash, so Redis
    /// must know them (again, if it restarted).
    pub(super) fn all(&self) -> [&Script; 6] {
        [
            &self.reserve,
            &self.swap,
            &self.put,
            &self.remove,
            &self.raise,
            &self.init,
        ]
    }

    /// The `remove` script for `peer_id` of `room`: only if its record is still `only`, or
    /// whatever it is with `""`; `identity` is the peer's when its record cannot say it (a
    /// reservation's placeholder), and `restore` the peer a released reservation was to
    /// replace, which gets its identity back.
    pub(super) fn removal(
        &self,
        room: &str,
        peer_id: PeerId,
        only: &str,
        (identity, restore): (Option<&str>, Option<PeerId>),
    ) -> ScriptInvocation<'_> {
        let mut call = self.remove.prepare_invoke();
        room_keys(&mut call, room)
            .arg(peer_id)
            .arg(only)
            .arg(room)
            .arg(identity.unwrap_or(""))
            .arg(restore.map(|id| id.to_string()).unwrap_or_default());
        call
    }

    /// The `put` script storing `record` (`text`, as JSON) in `room`: with `if_present`, only
    /// where the peer's place still is; for a join (`announce`: the `joined` event to
    /// publish), with the room's application `app`, its topology, seat and identity.
    pub(super) fn storing(
        &self,
        room: &str,
        record: &Record,
        text: &str,
        if_present: bool,
        announce: Option<(&str, &str)>,
    ) -> ScriptInvocation<'_> {
        let info = &record.info;
        let (channel, app, message) = match announce {
            Some((app, message)) => (room_channel(room), app, message),
            None => (String::new(), "", ""),
        };
        let mut call = self.put.prepare_invoke();
        room_keys(&mut call, room)
            .arg(info.id)
            .arg(text)
            .arg(if if_present { "if-present" } else { "always" })
            .arg(channel)
            .arg(room)
            .arg(app)
            .arg(info.role.topology().as_str())
            .arg(u8::from(info.role == Role::Host))
            .arg(info.identity.as_deref().unwrap_or(""))
            .arg(message);
        call
    }
}

/// The keys of `room` that `remove` and `put` read and write, in the order both take them
/// (`KEYS[1]` to `KEYS[6]`): its peers, the room list, its application, topology, host seat
/// and identities.
fn room_keys<'a, 'b>(
    call: &'b mut ScriptInvocation<'a>,
    room: &str,
) -> &'b mut ScriptInvocation<'a> {
    call.key(peers_key(room))
        .key(ROOMS_KEY)
        .key(app_key(room))
        .key(topology_key(room))
        .key(host_key(room))
        .key(identities_key(room))
}
