//! What the `Room` tests between native programs share: a real signal server in the test
//! process, and waiting for an event.

// Every test crate compiles all of this; only the tests of a native client that dials its
// host's WebTransport or WebSocket use `dialing`.
#[allow(dead_code)]
pub(crate) mod dialing;

use std::net::SocketAddr;
use std::time::Duration;

use ackwire::{Event, LinkInfo, LinkState, Room};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::time::timeout;

/// A signal server in this process, on loopback; stopped when dropped.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

pub(crate) async fn server() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel();
    let config = ackwire_signal::config::Config {
        bind: addr,
        ..ackwire_signal::config::Config::default()
    };
    tokio::spawn(async move {
        let _ = ackwire_signal::serve(listener, config, async {
            let _ = stopped.await;
        })
        .await;
    });
    Server { addr, _stop: stop }
}

/// Waits for the first event `pick` takes (other events are passed over).
pub(crate) async fn wait_for<T>(
    room: &mut Room,
    what: &str,
    mut pick: impl FnMut(Event) -> Option<T>,
) -> T {
    timeout(Duration::from_secs(15), async {
        loop {
            let event = room.next_event().await.expect("the room is open");
            if let Some(found) = pick(event) {
                return found;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {what} within 15 s"))
}

/// Waits for `room`'s welcome.
pub(crate) async fn joined(room: &mut Room) {
    wait_for(room, "the welcome", |e| {
        matches!(e, Event::Joined { .. }).then_some(())
    })
    .await;
}

/// Waits for the first link of `room`'s that connects.
pub(crate) async fn linked(room: &mut Room) -> LinkInfo {
    wait_for(room, "a connected link", |e| match e {
        Event::Link(l) if l.state == LinkState::Connected => Some(l),
        _ => None,
    })
    .await
}
