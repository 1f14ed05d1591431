//! A native client that dials its host's WebTransport as a browser does
//! (`NativeOptions::dial_webtransport`, for load generators and tests), on loopback through a
//! real signal server: both ends see the link over WebTransport, a reliable message each way
//! arrives exactly once, and the largest unreliable message the room allows crosses each way
//! in one datagram.
#![cfg(all(feature = "rooms", not(target_arch = "wasm32")))]

mod common;

use common::dialing::{exchange_the_largest, host_and_client};
use common::server;

use ackwire::{Role, RoomConfig, TransportKind};

fn config(role: Role) -> RoomConfig {
    let mut config = common::dialing::config("wt-native-test", role);
    config.native.dial_webtransport = role == Role::Client;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_client_that_dials_links_to_its_host_over_webtransport() {
    let server = server().await;
    let url = format!("http://{}/room/wt-native", server.addr);
    let (mut host, mut client, to_host, to_client) = host_and_client(
        &url,
        config(Role::Host),
        config(Role::Client),
        TransportKind::WebTransport,
    )
    .await;
    // The largest unreliable message fits one WebTransport datagram, both ways.
    exchange_the_largest(&mut host, &mut client, &to_host, &to_client).await;

    client.close().await;
    host.close().await;
}
