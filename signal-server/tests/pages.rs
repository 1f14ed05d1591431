//! Pages, static assets, `/healthz` and `/metrics` over real HTTP on 127.0.0.1.

mod common;

use common::Server;

/// A temp dir holding `web/` with the three pages and a bundle file; returns it and `web/`.
fn web_fixture() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("web");
    std::fs::create_dir(&p).unwrap();
    std::fs::write(p.join("index.html"), "<h1>index page</h1>").unwrap();
    std::fs::write(p.join("room.html"), "<h1>room page</h1>").unwrap();
    std::fs::write(p.join("dashboard.html"), "<h1>dashboard page</h1>").unwrap();
    std::fs::create_dir(p.join("pkg")).unwrap();
    std::fs::write(p.join("pkg/ackwire_wasm.js"), "export default 1;").unwrap();
    (dir, p)
}

#[tokio::test]
async fn pages_map_to_their_html_files() {
    let (_tmp, dir) = web_fixture();
    let server = Server::start(move |c| c.web_dir = Some(dir)).await;
    assert_eq!(server.get("/").await, (200, "<h1>index page</h1>".into()));
    assert_eq!(
        server.get("/room/lobby-1").await,
        (200, "<h1>room page</h1>".into())
    );
    assert_eq!(
        server.get("/room/lobby-1/dashboard").await,
        (200, "<h1>dashboard page</h1>".into())
    );
    assert_eq!(
        server.get("/dashboard").await,
        (200, "<h1>dashboard page</h1>".into())
    );
    assert_eq!(
        server.get("/pkg/ackwire_wasm.js").await,
        (200, "export default 1;".into())
    );
    assert_eq!(server.get("/pkg/missing.js").await.0, 404);
    assert_eq!(server.get("/healthz").await, (200, "ok".into()));
    server.stop().await;
}

#[tokio::test]
async fn invalid_room_names_in_page_urls_get_400_with_a_reason() {
    let (_tmp, dir) = web_fixture();
    let server = Server::start(move |c| c.web_dir = Some(dir)).await;
    for path in [
        "/room/bad%20name",
        "/room/a.b/dashboard",
        &format!("/room/{}", "x".repeat(65)),
    ] {
        let (status, body) = server.get(path).await;
        assert_eq!(status, 400, "{path}");
        assert!(body.contains("invalid room name"), "{path}: {body}");
    }
    server.stop().await;
}

#[tokio::test]
async fn static_files_cannot_escape_the_web_dir() {
    let (tmp, dir) = web_fixture();
    std::fs::write(tmp.path().join("secret.txt"), "secret").unwrap();
    let server = Server::start(move |c| c.web_dir = Some(dir)).await;
    for path in [
        "/../secret.txt",
        "/pkg/../../secret.txt",
        "/%2e%2e/secret.txt",
    ] {
        let (status, body) = server.get(path).await;
        assert_ne!(body, "secret", "{path} leaked a file outside the web dir");
        assert_ne!(status, 200, "{path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn new_redirects_to_a_fresh_valid_room() {
    let server = Server::start(|_| {}).await;
    let raw = {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        s.write_all(b"GET /new HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut buf = String::new();
        s.read_to_string(&mut buf).await.unwrap();
        buf
    };
    assert!(raw.starts_with("HTTP/1.1 303"), "{raw}");
    let location = raw
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .expect("location header");
    let name = location.strip_prefix("/room/").expect("room url");
    assert!(
        ackwire_signal::protocol::validate_room_name(name).is_ok(),
        "{name}"
    );
    server.stop().await;
}

#[tokio::test]
async fn metrics_are_prometheus_text_with_errors_by_code() {
    let server = Server::start(|_| {}).await;
    let mut c = server.client().await;
    c.send_raw("nonsense").await;
    c.error_code().await;
    let (status, body) = server.get("/metrics").await;
    assert_eq!(status, 200);
    for line in [
        "# TYPE ackwire_signal_rooms gauge",
        "ackwire_signal_connections 1",
        "ackwire_signal_errors_total{code=\"malformed_message\"} 1",
        "# TYPE ackwire_signal_signals_relayed counter",
        "# TYPE ackwire_signal_stats_reports counter",
        "ackwire_signal_peers 0",
    ] {
        assert!(
            body.lines().any(|l| l == line),
            "missing {line:?} in\n{body}"
        );
    }
    server.stop().await;
}
