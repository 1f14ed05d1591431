//! The signal server the room benches join through: the real `ackwire-signal`, in the bench's
//! process, on a loopback port of its own, until the process ends.

use std::net::SocketAddr;

use ackwire_signal::config::Config;

/// Starts a server with the defaults `tweak` changes (the address is the port it bound);
/// returns where it listens.
pub(crate) async fn start(tweak: impl FnOnce(&mut Config)) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let bind = listener.local_addr().unwrap();
    let mut config = Config {
        bind,
        ..Config::default()
    };
    tweak(&mut config);
    tokio::spawn(ackwire_signal::serve(
        listener,
        config,
        std::future::pending(),
    ));
    bind
}
