//! HTTPS and WSS from the server itself (`--tls-cert`, `--tls-key`), with a self-signed
//! certificate made by each test; real TLS clients over 127.0.0.1.

use crate::common;
use std::{
    ffi::OsStr,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Stdio,
    sync::Arc,
    time::{Duration, Instant},
};

use crate::common::{Client, Process, Server, WAIT, http_exchange, peer_id};
use rustls::{ClientConfig, RootCertStore, pki_types::ServerName};
use serde_json::json;
use tokio::{io::AsyncReadExt, net::TcpStream};
use tokio_rustls::TlsConnector;
use tokio_tungstenite::{Connector, connect_async_tls_with_config};

/// A self-signed certificate for 127.0.0.1 and localhost, written as PEM files.
struct Cert {
    _dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
    /// A client configuration that trusts this certificate and nothing else.
    client: Arc<ClientConfig>,
}

fn self_signed() -> Cert {
    let made =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap();
    write_cert(&made.cert, &made.signing_key)
}

/// A self-signed certificate for 127.0.0.1 whose `notAfter` is `not_after` (Unix seconds).
fn expiring_at(not_after: u64) -> Cert {
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    params.not_before = rcgen::date_time_ymd(2019, 1, 1);
    params.not_after = rcgen::date_time_ymd(1970, 1, 1) + Duration::from_secs(not_after);
    let key = rcgen::KeyPair::generate().unwrap();
    write_cert(&params.self_signed(&key).unwrap(), &key)
}

fn write_cert(made: &rcgen::Certificate, signing_key: &rcgen::KeyPair) -> Cert {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, made.pem()).unwrap();
    std::fs::write(&key, signing_key.serialize_pem()).unwrap();
    let mut roots = RootCertStore::empty();
    roots.add(made.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Cert {
        _dir: dir,
        cert,
        key,
        client: Arc::new(client),
    }
}

async fn tls_server(cert: &Cert) -> Server {
    let (c, k) = (cert.cert.clone(), cert.key.clone());
    Server::start(move |config| {
        config.tls_cert = Some(c);
        config.tls_key = Some(k);
    })
    .await
}

/// A `wss://` client (Nagle off, as browsers open their sockets).
async fn wss(addr: SocketAddr, cert: &Cert) -> Client {
    let (ws, _) = connect_async_tls_with_config(
        format!("wss://{addr}/ws"),
        None,
        true,
        Some(Connector::Rustls(Arc::clone(&cert.client))),
    )
    .await
    .unwrap();
    Client { ws }
}

async fn https_get(addr: SocketAddr, cert: &Cert, path: &str) -> common::HttpResponse {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::IpAddress(addr.ip().into());
    let tls = TlsConnector::from(Arc::clone(&cert.client))
        .connect(name, tcp)
        .await
        .unwrap();
    http_exchange(tls, path, &[]).await
}

#[tokio::test]
async fn a_wss_client_joins_a_room_and_https_serves_the_pages() {
    let cert = self_signed();
    let server = tls_server(&cert).await;
    let mut a = wss(server.addr, &cert).await;
    let welcome = a
        .join_with(json!({"type": "join", "version": 1, "room": "lobby", "kind": "browser"}))
        .await;
    assert_eq!(welcome["type"], "welcome");
    // A second peer, to see frames relayed over TLS both ways.
    let mut b = wss(server.addr, &cert).await;
    let wb = b.join("lobby").await;
    assert_eq!(
        a.recv_type("peer_joined").await["peer"]["id"],
        wb["peer_id"]
    );
    b.send(json!({"type": "signal", "to": peer_id(&welcome), "data": "offer"}))
        .await;
    assert_eq!(a.recv_type("signal").await["data"], "offer");

    let page = https_get(server.addr, &cert, "/").await;
    assert_eq!(page.status, 200);
    assert!(page.text().contains("<html"), "{}", page.text());
    let health = https_get(server.addr, &cert, "/healthz").await;
    assert_eq!((health.status, health.text().as_str()), (200, "ok"));
    server.stop().await;
}

#[tokio::test]
async fn plain_http_to_the_tls_port_gets_no_page() {
    let cert = self_signed();
    let server = tls_server(&cert).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut tcp, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(WAIT, tcp.read_to_end(&mut buf))
        .await
        .expect("the server drops a connection that is not TLS");
    assert!(!String::from_utf8_lossy(&buf).contains("<html"));
    server.stop().await;
}

#[tokio::test]
async fn a_stalled_tls_handshake_does_not_hold_up_other_clients() {
    let cert = self_signed();
    let server = tls_server(&cert).await;
    // Connected, then silent: its handshake never starts. And one that stops half-way
    // through a ClientHello.
    let silent = TcpStream::connect(server.addr).await.unwrap();
    let mut partial = TcpStream::connect(server.addr).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut partial, &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .await
        .unwrap();
    let start = Instant::now();
    for _ in 0..3 {
        let mut c = wss(server.addr, &cert).await;
        assert_eq!(c.join("lobby").await["type"], "welcome");
    }
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "three joins behind two stalled handshakes took {:?}",
        start.elapsed()
    );
    drop((silent, partial));
    server.stop().await;
}

#[tokio::test]
async fn wss_frames_sent_back_to_back_are_not_held_back() {
    let cert = self_signed();
    let (c, k) = (cert.cert.clone(), cert.key.clone());
    let server = Server::start(move |config| {
        config.tls_cert = Some(c);
        config.tls_key = Some(k);
        config.rate_per_sec = 10_000;
        config.rate_burst = 10_000;
    })
    .await;
    let mut a = wss(server.addr, &cert).await;
    let wa = a.join("lobby").await;
    let mut b = wss(server.addr, &cert).await;
    let wb = b.join("lobby").await;
    a.recv_type("peer_joined").await;
    // Without TCP_NODELAY on the server's side of the TLS connection too.
    common::assert_signals_not_held_back(&mut a, &mut b, peer_id(&wa), peer_id(&wb)).await;
    server.stop().await;
}

#[tokio::test]
async fn shutdown_closes_wss_sessions_with_going_away() {
    let cert = self_signed();
    let server = tls_server(&cert).await;
    let mut a = wss(server.addr, &cert).await;
    a.join("lobby").await;
    let stopping = tokio::spawn(server.stop());
    let frame = a.closed_cleanly().await;
    assert_eq!(frame.reason.as_str(), "server_shutdown");
    stopping.await.unwrap();
}

/// `serve` with these TLS files: the error it stops with at once.
async fn startup_error(cert: &Path, key: &Path) -> String {
    let config = ackwire_signal::Config {
        bind: "127.0.0.1:0".parse().unwrap(),
        tls_cert: Some(cert.to_owned()),
        tls_key: Some(key.to_owned()),
        ..Default::default()
    };
    let listener = tokio::net::TcpListener::bind(config.bind).await.unwrap();
    let served = ackwire_signal::serve(listener, config, std::future::pending());
    match tokio::time::timeout(WAIT, served).await {
        Ok(Err(err)) => err.to_string(),
        Ok(Ok(())) => panic!("served and stopped without an error"),
        Err(_) => panic!("still serving with cert {cert:?} and key {key:?}"),
    }
}

#[tokio::test]
async fn missing_or_garbled_tls_files_are_startup_errors_naming_the_file() {
    let cert = self_signed();
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing-key.pem");
    let garbled = dir.path().join("garbled.pem");
    std::fs::write(&garbled, "this is not a key\n").unwrap();
    let bad_base64 = dir.path().join("bad-base64.pem");
    std::fs::write(
        &bad_base64,
        "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let other_key = dir.path().join("other-key.pem");
    std::fs::write(
        &other_key,
        rcgen::KeyPair::generate().unwrap().serialize_pem(),
    )
    .unwrap();
    for (cert_file, key_file, flag, says) in [
        (&cert.cert, &missing, "--tls-key", "cannot read"),
        (&cert.cert, &garbled, "--tls-key", "no private key found"),
        (&cert.cert, &bad_base64, "--tls-key", "not valid PEM"),
        (
            &cert.cert,
            &other_key,
            "--tls-key",
            "cannot be used with the certificate",
        ),
        (&missing, &cert.key, "--tls-cert", "cannot read"),
        (&garbled, &cert.key, "--tls-cert", "no certificate found"),
        // A key where the certificate should be.
        (&cert.key, &cert.key, "--tls-cert", "no certificate found"),
    ] {
        let err = startup_error(cert_file, key_file).await;
        let named = if flag == "--tls-key" {
            key_file
        } else {
            cert_file
        };
        assert!(
            err.contains(&format!("{flag} {}", named.display())) && err.contains(says),
            "{flag} {named:?}: {err}"
        );
    }
}

#[tokio::test]
async fn the_binary_stops_at_startup_with_a_message_naming_a_garbled_key() {
    let cert = self_signed();
    let dir = tempfile::tempdir().unwrap();
    let garbled = dir.path().join("garbled-key.pem");
    std::fs::write(&garbled, "-----BEGIN PRIVATE KEY-----\nnot base64 at all\n").unwrap();
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_ackwire-signal"))
        .args(["--bind", "127.0.0.1:0", "--tls-cert"])
        .arg(&cert.cert)
        .arg("--tls-key")
        .arg(&garbled)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(WAIT, run)
        .await
        .expect("the binary exits")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("--tls-key {}", garbled.display())),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("listening"), "{stderr}");
}

/// `ackwire-signal --tls-cert DIR/cert.pem --tls-key DIR/key.pem` as a process (so it can be
/// sent SIGHUP).
async fn tls_process(dir: &Path) -> Process {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let args = [
        OsStr::new("--tls-cert"),
        cert.as_os_str(),
        OsStr::new("--tls-key"),
        key.as_os_str(),
    ];
    Process::start(&args).await
}

fn install(cert: &Cert, dir: &Path) {
    std::fs::copy(&cert.cert, dir.join("cert.pem")).unwrap();
    std::fs::copy(&cert.key, dir.join("key.pem")).unwrap();
}

/// Whether a client trusting only `cert` completes a TLS handshake with the server.
async fn trusted_by(addr: SocketAddr, cert: &Cert) -> bool {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::IpAddress(addr.ip().into());
    TlsConnector::from(Arc::clone(&cert.client))
        .connect(name, tcp)
        .await
        .is_ok()
}

#[tokio::test]
async fn sighup_reloads_a_renewed_certificate_without_dropping_anyone() {
    let (old, renewed) = (self_signed(), self_signed());
    let dir = tempfile::tempdir().unwrap();
    install(&old, dir.path());
    let mut server = tls_process(dir.path()).await;
    let addr = server.addr;
    let mut a = wss(addr, &old).await;
    let wa = a.join("lobby").await;

    // The renewal writes the files, then signals the server (certbot's deploy hook).
    install(&renewed, dir.path());
    server.signal("HUP");
    server.logged("TLS certificate and key reloaded").await;
    assert!(
        trusted_by(addr, &renewed).await,
        "new handshakes present the renewed certificate"
    );
    assert!(!trusted_by(addr, &old).await, "the old certificate is gone");
    // The session that began before the reload goes on: it hears a newcomer and gets a signal.
    let mut b = wss(addr, &renewed).await;
    let wb = b.join("lobby").await;
    assert_eq!(
        a.recv_type("peer_joined").await["peer"]["id"],
        wb["peer_id"]
    );
    b.send(json!({"type": "signal", "to": peer_id(&wa), "data": "offer"}))
        .await;
    assert_eq!(a.recv_type("signal").await["data"], "offer");

    // A broken renewal (a key that is not PEM) is refused, naming the file; the server keeps
    // presenting the certificate it has.
    std::fs::write(
        dir.path().join("key.pem"),
        "-----BEGIN PRIVATE KEY-----\nnot base64\n",
    )
    .unwrap();
    server.signal("HUP");
    let refused = server.logged("TLS reload failed").await;
    assert!(
        refused.contains("--tls-key") && refused.contains("key.pem"),
        "{refused}"
    );
    assert!(trusted_by(addr, &renewed).await);
    // And a later good one is taken.
    install(&old, dir.path());
    server.signal("HUP");
    server.logged("TLS certificate and key reloaded").await;
    assert!(trusted_by(addr, &old).await);

    // An operator sees it all in /metrics: two reloads taken, one refused, and the handshakes
    // of the clients that distrusted the certificate presented.
    for (series, value) in [
        (r#"ackwire_signal_tls_reloads_total{result="ok"}"#, 2.0),
        (r#"ackwire_signal_tls_reloads_total{result="failed"}"#, 1.0),
        (
            r#"ackwire_signal_tls_handshakes_total{result="failed"}"#,
            1.0,
        ),
    ] {
        metric_reaches(addr, &old, series, value).await;
    }
}

/// Waits until `/metrics`, fetched over HTTPS, shows `series` at `value` (the server counts a
/// handshake once it ends on its side, a moment after the client's).
async fn metric_reaches(addr: SocketAddr, cert: &Cert, series: &str, value: f64) {
    let deadline = Instant::now() + WAIT;
    loop {
        let text = https_get(addr, cert, "/metrics").await.text();
        let read = text
            .lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse::<f64>().ok());
        if read == Some(value) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{series} is {read:?}, not {value}:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_certificates_expiry_is_in_metrics_and_logged_with_a_warning_near_or_past_it() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (far, soon) = (now + 400 * 86_400, now + 7 * 86_400);
    let dir = tempfile::tempdir().unwrap();
    let year = expiring_at(far);
    install(&year, dir.path());
    let mut server = tls_process(dir.path()).await;
    let series = "ackwire_signal_tls_certificate_expiry_timestamp_seconds";
    metric_reaches(server.addr, &year, series, far as f64).await;

    // A week left: the reload is taken, with a warning that says what to do.
    let week = expiring_at(soon);
    install(&week, dir.path());
    server.signal("HUP");
    let warned = server.logged("TLS certificate expires soon").await;
    assert!(
        warned.contains("days_left=6") || warned.contains("days_left=7"),
        "{warned}"
    );
    assert!(warned.contains("renew it and send SIGHUP"), "{warned}");
    metric_reaches(server.addr, &week, series, soon as f64).await;

    // Past its notAfter: clients refuse it, and the log says so.
    install(&expiring_at(1_577_836_800), dir.path());
    server.signal("HUP");
    let expired = server.logged("TLS certificate expired").await;
    assert!(expired.contains("2020"), "{expired}");
}
