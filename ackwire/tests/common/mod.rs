//! What the `Room` tests between native programs share: a real signal server in the test
//! process, and waiting for an event.

use std::net::SocketAddr;
use std::time::Duration;

use ackwire::{Event, Room};
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
