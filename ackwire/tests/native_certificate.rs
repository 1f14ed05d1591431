//! A host room's host with a certificate of its own (`NativeOptions::certificate`), on
//! loopback through a real signal server: it publishes `wss://<name>:<port>/ackwire` and
//! `https://<name>:<port>/ackwire` with no hash, and native clients that dial as browsers do
//! (`dial_websocket`, `dial_webtransport`) link over either when they trust the certificate
//! (`tls_ca`: a self-signed certificate made by the test, as the host makes its own), and are
//! refused by TLS when they do not. A certificate that cannot be used fails the join.
#![cfg(all(feature = "rooms", not(target_arch = "wasm32")))]

mod common;

use std::path::PathBuf;

use common::dialing::{exchange_the_largest, host_and_client};
use common::{server, wait_for};

use ackwire::{
    Event, Failure, HostCertificate, JoinError, LinkState, Role, Room, RoomConfig, TransportKind,
};
use futures_util::StreamExt;
use tempfile::TempDir;

/// The game's id, as `common::dialing::config` declares it.
const APP: &str = "cert-native-test";

/// A self-signed certificate for `localhost` and its key, as PEM files in a directory of
/// their own (removed with it).
struct Files {
    _dir: TempDir,
    chain: PathBuf,
    key: PathBuf,
}

fn localhost_certificate() -> Files {
    let identity = wtransport::Identity::self_signed(["localhost"]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("fullchain.pem");
    let key = dir.path().join("privkey.pem");
    let pem = identity.certificate_chain().as_slice()[0].to_pem();
    std::fs::write(&chain, pem).unwrap();
    std::fs::write(&key, identity.private_key().to_secret_pem()).unwrap();
    Files {
        _dir: dir,
        chain,
        key,
    }
}

/// A host presenting `files` for `localhost`.
fn host_config(files: &Files) -> RoomConfig {
    let mut config = common::dialing::config(APP, Role::Host);
    let certificate = HostCertificate::new(&files.chain, &files.key, "localhost");
    config.native.certificate = Some(certificate);
    config
}

/// A client dialling the host's WebSocket (`websocket`) or WebTransport, trusting `ca`.
fn client_config(websocket: bool, ca: Option<&PathBuf>) -> RoomConfig {
    let mut config = common::dialing::config(APP, Role::Client);
    config.native.dial_websocket = websocket;
    config.native.dial_webtransport = !websocket;
    config.native.tls_ca = ca.cloned();
    config
}

/// The service the host of `room` publishes, as a browser joining it hears it in its
/// welcome (then it leaves).
async fn published(server: &common::Server, room: &str) -> serde_json::Value {
    let url = format!(
        "ws://{}/ws?version=1&room={room}&kind=browser&role=client&app={APP}&app_version=1\
         &channels=reliable-ordered%2Cunreliable",
        server.addr
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let welcome = match ws.next().await {
        Some(Ok(message)) => message.into_text().unwrap(),
        other => panic!("no welcome: {other:?}"),
    };
    let welcome: serde_json::Value = serde_json::from_str(&welcome).unwrap();
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    let peers = welcome["peers"].as_array().expect("peers");
    let host = peers.iter().find(|p| p["role"] == "host").expect("a host");
    host["webtransport"].clone()
}

/// Waits for `room`'s link to its host to be lost, and says why; a link that connects first
/// fails the test.
async fn lost_before_connecting(room: &mut Room) -> Option<Failure> {
    wait_for(room, "the link lost", |e| match e {
        Event::Link(l) if l.state == LinkState::Connected => {
            panic!("linked over {:?} to an untrusted host", l.transport)
        }
        Event::Link(l) if l.state == LinkState::Lost => Some(l.reason),
        _ => None,
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_with_its_own_certificate_serves_wss_to_a_client_that_trusts_it() {
    let server = server().await;
    let url = format!("http://{}/room/cert-wss", server.addr);
    let files = localhost_certificate();
    let (mut host, mut client, to_host, to_client) = host_and_client(
        &url,
        host_config(&files),
        client_config(true, Some(&files.chain)),
        TransportKind::WebSocket,
    )
    .await;
    exchange_the_largest(&mut host, &mut client, &to_host, &to_client).await;

    let service = published(&server, "cert-wss").await;
    let websocket = service["websocket"].as_str().expect("a WebSocket");
    let port = websocket
        .strip_prefix("wss://localhost:")
        .and_then(|rest| rest.strip_suffix("/ackwire"))
        .and_then(|port| port.parse::<u16>().ok());
    assert!(port.is_some_and(|p| p != 0), "{service}");

    client.close().await;
    host.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_with_its_own_certificate_publishes_webtransport_without_hashes_and_a_client_that_trusts_it_links_over_it()
 {
    let server = server().await;
    let url = format!("http://{}/room/cert-wt", server.addr);
    let files = localhost_certificate();
    // Both ends say WebTransport; the largest message fits one datagram, both ways.
    let (mut host, mut client, to_host, to_client) = host_and_client(
        &url,
        host_config(&files),
        client_config(false, Some(&files.chain)),
        TransportKind::WebTransport,
    )
    .await;
    exchange_the_largest(&mut host, &mut client, &to_host, &to_client).await;

    let service = published(&server, "cert-wt").await;
    let wt = service["url"].as_str().expect("a URL");
    assert!(
        wt.starts_with("https://localhost:") && wt.ends_with("/ackwire"),
        "{service}"
    );
    assert!(service.get("cert_hashes").is_none(), "{service}");

    client.close().await;
    host.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_trust_the_hosts_certificate_is_refused_by_tls_over_the_websocket() {
    let server = server().await;
    let url = format!("http://{}/room/cert-wss-refused", server.addr);
    let files = localhost_certificate();
    let mut host = Room::join(&url, host_config(&files)).unwrap();
    common::joined(&mut host).await;

    // The public roots know nothing of a self-signed certificate; the WebSocket is this
    // client's only way (no WebRTC), so nothing else links it.
    let mut client = Room::join(&url, client_config(true, None)).unwrap();
    let why = lost_before_connecting(&mut client).await;
    match &why {
        Some(Failure::Transport(reason)) => {
            assert!(
                reason.contains("TLS") && reason.contains("certificate"),
                "{reason}"
            );
        }
        other => panic!("expected a TLS failure, got {other:?}"),
    }

    client.close().await;
    host.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_trust_the_hosts_certificate_is_refused_by_tls_over_webtransport_and_links_otherwise()
 {
    let server = server().await;
    let url = format!("http://{}/room/cert-wt-refused", server.addr);
    let files = localhost_certificate();
    let mut host = Room::join(&url, host_config(&files)).unwrap();
    common::joined(&mut host).await;

    let mut client = Room::join(&url, client_config(false, None)).unwrap();
    let why = lost_before_connecting(&mut client).await;
    match &why {
        Some(Failure::Transport(reason)) => {
            assert!(reason.contains("certificate"), "{reason}");
        }
        other => panic!("expected a TLS failure, got {other:?}"),
    }
    // The session never opened: the link takes the ordinary path (raw UDP between natives).
    let to_host = common::linked(&mut client).await;
    assert_eq!(to_host.transport, TransportKind::Udp, "{to_host:?}");

    client.close().await;
    host.close().await;
}

#[test]
fn a_host_certificate_that_cannot_be_used_fails_the_join() {
    let files = localhost_certificate();
    let url = "http://127.0.0.1:9/room/cert-bad";
    let missing = files.chain.with_file_name("missing.pem");
    let mut config = host_config(&files);
    config.native.certificate = Some(HostCertificate::new(&files.chain, &missing, "localhost"));
    match Room::join(url, config) {
        Err(JoinError::Certificate { path, reason }) => {
            assert_eq!(path, missing);
            assert!(reason.contains("cannot read"), "{reason}");
        }
        other => panic!("expected a certificate error, got {other:?}"),
    }

    // A name the certificate does not hold.
    let mut config = host_config(&files);
    let elsewhere = HostCertificate::new(&files.chain, &files.key, "game.example.com");
    config.native.certificate = Some(elsewhere);
    match Room::join(url, config) {
        Err(JoinError::CertificateName { name, reason }) => {
            assert_eq!(name, "game.example.com");
            assert!(reason.contains("not a name of the certificate"), "{reason}");
        }
        other => panic!("expected a certificate name error, got {other:?}"),
    }
}
