//! A host's WebRTC on one socket (`NativeOptions::host_ice_lite`): a native host and native
//! clients that reach it over WebRTC (they do not encrypt raw UDP, the host does, so their
//! links go through DTLS), on loopback through a real signal server. What the game sees: each
//! client linked over WebRTC, reliable messages both ways exactly once, clients that leave
//! and join again, and the same from a host on the `webrtc` crate when lite is off.
#![cfg(all(feature = "rooms", not(target_arch = "wasm32")))]

mod common;

use common::{joined, linked, server, wait_for};

use std::collections::HashMap;
use std::time::Duration;

use ackwire::{App, ChannelKind, Event, PeerId, Role, Room, RoomConfig, TransportKind};
use tokio::time::timeout;

fn config(role: Role, encrypt: bool) -> RoomConfig {
    let app = App::new("lite-test", 1, [ChannelKind::ReliableOrdered]);
    let mut config = RoomConfig::new(app).with_role(role);
    config.native.bind = "127.0.0.1:0".parse().unwrap();
    config.native.encrypt = encrypt;
    config
}

/// Clients each send `count` numbered messages to the host; the host answers each with the
/// same bytes. Returns what every client got back, in order.
async fn exchange(host: &mut Room, clients: &mut [(Room, PeerId)], count: u32) -> Vec<Vec<u32>> {
    for (client, to_host) in clients.iter_mut() {
        for i in 0..count {
            client.send(*to_host, 0, &i.to_le_bytes()).unwrap();
        }
    }
    // The host echoes everything it gets, to whoever sent it.
    let expected = clients.len() * count as usize;
    let mut echoed: HashMap<PeerId, Vec<u32>> = HashMap::new();
    timeout(Duration::from_secs(20), async {
        let mut seen = 0;
        while seen < expected {
            if let Event::Message { peer, bytes, .. } = host.next_event().await.unwrap() {
                host.send(peer, 0, &bytes).unwrap();
                echoed
                    .entry(peer)
                    .or_default()
                    .push(u32::from_le_bytes(bytes.try_into().unwrap()));
                seen += 1;
            }
        }
    })
    .await
    .expect("every client's messages at the host within 20 s");
    let all: Vec<u32> = (0..count).collect();
    assert_eq!(echoed.len(), clients.len(), "every client reached the host");
    assert!(
        echoed.values().all(|got| *got == all),
        "each once, in order"
    );
    let mut back = Vec::new();
    for (client, _) in clients.iter_mut() {
        let mut got = Vec::new();
        while got.len() < count as usize {
            let bytes = wait_for(client, "the host's echo", |e| match e {
                Event::Message { bytes, .. } => Some(bytes),
                _ => None,
            })
            .await;
            got.push(u32::from_le_bytes(bytes.try_into().unwrap()));
        }
        back.push(got);
    }
    back
}

async fn clients_over_webrtc(lite: bool) {
    let server = server().await;
    let url = format!("http://{}/room/lite-{lite}", server.addr);
    let mut host_config = config(Role::Host, true);
    host_config.native.host_ice_lite = lite;
    let mut host = Room::join(&url, host_config).unwrap();
    joined(&mut host).await;
    let mut clients = Vec::new();
    for _ in 0..3 {
        let mut client = Room::join(&url, config(Role::Client, false)).unwrap();
        let link = linked(&mut client).await;
        assert_eq!(link.transport, TransportKind::WebRtc, "{link:?}");
        assert_eq!(Some(link.peer), client.host());
        clients.push((client, link.peer));
    }
    let count = 50;
    let all: Vec<u32> = (0..count).collect();
    for got in exchange(&mut host, &mut clients, count).await {
        assert_eq!(got, all, "the host's answers, each once, in order");
    }
    // A client leaves; a new one links to the same host and is answered too.
    let (mut gone, _) = clients.remove(0);
    gone.close().await;
    wait_for(&mut host, "the client's leave", |e| {
        matches!(e, Event::PeerLeft { .. }).then_some(())
    })
    .await;
    let mut late = Room::join(&url, config(Role::Client, false)).unwrap();
    let link = linked(&mut late).await;
    assert_eq!(link.transport, TransportKind::WebRtc);
    clients.push((late, link.peer));
    for got in exchange(&mut host, &mut clients, count).await {
        assert_eq!(got, all);
    }
    for (client, _) in &mut clients {
        client.close().await;
    }
    host.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ice_lite_host_serves_webrtc_clients_on_one_socket_and_takes_new_ones_after_a_leave() {
    clients_over_webrtc(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_on_the_webrtc_crate_serves_the_same_clients_when_lite_is_off() {
    clients_over_webrtc(false).await;
}
