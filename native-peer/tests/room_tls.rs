//! `ackwire-peer join https://…`: signalling over `wss://` to a real signal server serving
//! TLS itself (`--tls-cert`/`--tls-key`) on 127.0.0.1, with a self-signed certificate made
//! by each test. The peer trusts it only through `--tls-ca`; without it, or with another
//! certificate there, it is refused with a message that says what to do.

mod room_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use room_support::{Peer, Server, blocking, link_state};

/// A self-signed certificate for 127.0.0.1 and localhost, as PEM files.
struct Cert {
    dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
}

fn self_signed() -> Cert {
    let made =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    Cert { dir, cert, key }
}

async fn tls_server(cert: &Cert) -> Server {
    let config = ackwire_signal::config::Config {
        tls_cert: Some(cert.cert.clone()),
        tls_key: Some(cert.key.clone()),
        ..Default::default()
    };
    Server::start_with("127.0.0.1:0".parse().unwrap(), config).await
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_natives_join_over_wss_trusting_the_servers_certificate_and_link() {
    let cert = self_signed();
    let server = tls_server(&cert).await;
    let url = server.room_url("tls-pair");
    assert!(url.starts_with("https://"), "{url}");
    let ca = cert.cert.clone();
    blocking(move || {
        let mut a = Peer::join_with(&url, &["--tls-ca", path(&ca)]);
        let a_id = a.peer_id();
        let mut b = Peer::join_with(&url, &["--tls-ca", path(&ca)]);
        let b_id = b.peer_id();
        for (me, other) in [(&mut a, b_id), (&mut b, a_id)] {
            me.wait_for("a UDP link", Duration::from_secs(10), |l| {
                link_state(l, other, "connected") && l["transport"] == "udp"
            });
        }
        // The room over wss works as over ws: the greetings crossed the link, once each.
        for (me, other) in [(&mut a, b_id), (&mut b, a_id)] {
            let greeting = format!("hello from native peer {other}");
            me.wait_for("the greeting", Duration::from_secs(10), |l| {
                l["type"] == "chat" && l["text"] == greeting
            });
        }
    })
    .await;
    server.stop().await;
}

/// The first `signalling` line saying the socket is down, and whether a welcome came first.
fn refused(peer: &mut Peer) -> String {
    let line = peer.wait_for("signalling down", Duration::from_secs(10), |l| {
        l["type"] == "signalling" && l["state"] == "reconnecting"
    });
    assert!(
        !peer.seen.iter().any(|l| l["type"] == "welcome"),
        "joined a server it must not trust: {:?}",
        peer.seen
    );
    line["detail"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_is_refused_with_what_to_do_and_no_join() {
    let cert = self_signed();
    let other = self_signed();
    let server = tls_server(&cert).await;
    let url = server.room_url("tls-refused");
    let wrong_ca = other.cert.clone();
    blocking(move || {
        // The public roots know nothing of a self-signed certificate.
        let detail = refused(&mut Peer::join(&url));
        assert!(
            detail.contains("invalid peer certificate") && detail.contains("--tls-ca FILE"),
            "{detail}"
        );
        // Another certificate in --tls-ca: the public roots are not consulted either.
        let detail = refused(&mut Peer::join_with(&url, &["--tls-ca", path(&wrong_ca)]));
        assert!(
            detail.contains("invalid peer certificate")
                && detail.contains("checked against the certificates of tls_ca only"),
            "{detail}"
        );
    })
    .await;
    server.stop().await;
}

#[test]
fn a_bad_tls_ca_stops_join_at_once_naming_the_file() {
    let cert = self_signed();
    let missing = cert.dir.path().join("missing.pem");
    let garbled = cert.dir.path().join("garbled.pem");
    std::fs::write(
        &garbled,
        "-----BEGIN CERTIFICATE-----\nnot base64 !!\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    // The key file holds PEM, but no certificate.
    let https = "https://127.0.0.1:9/room/lobby";
    for (url, file, expected) in [
        (https, &missing, "cannot read"),
        (https, &garbled, "not valid PEM"),
        (https, &cert.key, "no certificate found"),
        (
            "http://127.0.0.1:9/room/lobby",
            &cert.cert,
            "is not https://",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ackwire-peer"))
            .args(["join", url, "--bind", "127.0.0.1:0", "--tls-ca", path(file)])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file:?}: {stderr}");
        let said = stderr
            .lines()
            .find(|l| l.contains(&format!("--tls-ca {}: ", file.display())));
        assert!(
            said.is_some_and(|l| l.contains(expected)),
            "{file:?}: {stderr}"
        );
    }
}
