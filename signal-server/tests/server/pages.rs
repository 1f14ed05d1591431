//! Pages, static assets, `/healthz` and `/metrics` over real HTTP on 127.0.0.1.

use crate::common;
use crate::common::Server;

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

// ---- Compression, versioned asset URLs and their cache headers ----

use crate::common::{HttpResponse, http_get_with};
use std::io::Read;

const ROOM_PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <link rel="stylesheet" href="/style.css">
  <link rel="modulepreload" href="/pkg/ackwire_wasm.js">
  <link rel="preload" href="/pkg/ackwire_wasm_bg.wasm" as="fetch" crossorigin>
</head>
<body>
  <h1><a href="/">ackwire</a> · <a href="/new">new room</a></h1>
  <script type="module" src="/room.js"></script>
</body>
</html>
"#;

/// A web root shaped like the real one: pages that load a stylesheet, a script importing the
/// bindings, and a bundle large enough to be worth compressing.
fn site_fixture() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("web");
    std::fs::create_dir_all(p.join("pkg")).unwrap();
    std::fs::write(p.join("room.html"), ROOM_PAGE).unwrap();
    std::fs::write(
        p.join("index.html"),
        ROOM_PAGE.replace("room.js", "index.js"),
    )
    .unwrap();
    std::fs::write(p.join("dashboard.html"), ROOM_PAGE).unwrap();
    std::fs::write(p.join("style.css"), "body { margin: 0 }\n".repeat(200)).unwrap();
    let script = format!(
        "import init from '/pkg/ackwire_wasm.js';\n{}",
        "init().then(() => console.log('ready'));\n".repeat(300)
    );
    std::fs::write(p.join("room.js"), &script).unwrap();
    std::fs::write(p.join("index.js"), &script).unwrap();
    std::fs::write(
        p.join("pkg/ackwire_wasm.js"),
        "export default async function init() { await fetch(new URL('ackwire_wasm_bg.wasm', import.meta.url)); }\n".repeat(50),
    )
    .unwrap();
    std::fs::write(p.join("pkg/ackwire_wasm_bg.wasm"), wasm_like_bytes()).unwrap();
    (dir, p)
}

/// 200 KB with a wasm module's magic and the mixed redundancy of code.
fn wasm_like_bytes() -> Vec<u8> {
    let mut bytes = b"\0asm\x01\0\0\0".to_vec();
    let mut x = 0x2545_f491_u32;
    while bytes.len() < 200_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let op = (x % 24) as u8;
        bytes.extend_from_slice(&[0x20, op, 0x41, (x >> 8) as u8 & 0x0f, 0x6a, 0x21, op]);
    }
    bytes
}

/// The version the page's asset URLs carry.
fn version_in(page: &str) -> String {
    let at = page.find("/v/").expect("a versioned URL in the page") + 3;
    page[at..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect()
}

fn decoded(res: &HttpResponse) -> Vec<u8> {
    let mut out = Vec::new();
    match res.header("content-encoding").as_deref() {
        None => out.clone_from(&res.body),
        Some("gzip") => {
            flate2::read::GzDecoder::new(&res.body[..])
                .read_to_end(&mut out)
                .unwrap();
        }
        Some("br") => {
            brotli::Decompressor::new(&res.body[..], 4096)
                .read_to_end(&mut out)
                .unwrap();
        }
        Some(other) => panic!("unexpected content-encoding {other}"),
    }
    out
}

#[tokio::test]
async fn assets_and_pages_are_sent_with_br_or_gzip_as_accept_encoding_asks_and_decode_to_the_file()
{
    let (_tmp, dir) = site_fixture();
    let wasm = std::fs::read(dir.join("pkg/ackwire_wasm_bg.wasm")).unwrap();
    let script = std::fs::read(dir.join("room.js")).unwrap();
    let server = Server::start({
        let dir = dir.clone();
        move |c| c.web_dir = Some(dir)
    })
    .await;
    let page = http_get_with(server.addr, "/room/lobby", &[]).await;
    assert_eq!(page.header("content-encoding"), None);
    let version = version_in(&page.text());
    let cases: [(&str, Option<&str>); 7] = [
        ("br", Some("br")),
        ("gzip", Some("gzip")),
        ("gzip, deflate, br, zstd", Some("br")),
        ("br;q=0, gzip", Some("gzip")),
        ("deflate", None),
        ("identity", None),
        ("", None),
    ];
    for (path, file) in [
        (format!("/v/{version}/pkg/ackwire_wasm_bg.wasm"), &wasm),
        (format!("/v/{version}/room.js"), &script),
        ("/pkg/ackwire_wasm_bg.wasm".to_owned(), &wasm),
        ("/room.js".to_owned(), &script),
        ("/room/lobby".to_owned(), &page.body),
    ] {
        for (accept, coding) in cases {
            let headers: &[(&str, &str)] = if accept.is_empty() {
                &[]
            } else {
                &[("accept-encoding", accept)]
            };
            let res = http_get_with(server.addr, &path, headers).await;
            assert_eq!(res.status, 200, "{path} {accept}");
            assert_eq!(
                res.header("content-encoding").as_deref(),
                coding,
                "{path} {accept:?}"
            );
            assert_eq!(&decoded(&res), file, "{path} {accept:?} decoded");
            if coding.is_some() {
                assert!(
                    res.body.len() < file.len() / 2,
                    "{path} {accept}: {} bytes",
                    res.body.len()
                );
                let vary = res.header("vary").unwrap_or_default().to_ascii_lowercase();
                assert!(
                    vary.contains("accept-encoding"),
                    "{path} {accept}: vary {vary:?}"
                );
            }
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn the_signalling_socket_and_metrics_are_not_compressed() {
    let server = Server::start(|_| {}).await;
    let metrics = http_get_with(server.addr, "/metrics", &[("accept-encoding", "gzip, br")]).await;
    assert_eq!(metrics.status, 200);
    assert_eq!(metrics.header("content-encoding"), None);
    assert!(metrics.text().contains("ackwire_signal_connections"));
    // A browser's upgrade request carries Accept-Encoding too.
    let mut c = common::upgrade(
        server.addr,
        "/ws",
        &[("accept-encoding", "gzip, deflate, br")],
    )
    .await
    .unwrap();
    assert_eq!(c.join("lobby").await["type"], "welcome");
    server.stop().await;
}

#[tokio::test]
async fn pages_are_no_cache_and_point_at_versioned_assets_and_imports() {
    let (_tmp, dir) = site_fixture();
    let server = Server::start(move |c| c.web_dir = Some(dir)).await;
    for path in ["/", "/room/lobby", "/room/lobby/dashboard", "/dashboard"] {
        let res = http_get_with(server.addr, path, &[]).await;
        assert_eq!(res.status, 200, "{path}");
        assert_eq!(
            res.header("cache-control").as_deref(),
            Some("no-cache"),
            "{path}"
        );
        assert_eq!(
            res.header("content-type").as_deref(),
            Some("text/html; charset=utf-8")
        );
        let page = res.text();
        let v = version_in(&page);
        assert_eq!(v.len(), 16, "{page}");
        for url in [
            format!("href=\"/v/{v}/style.css\""),
            format!("href=\"/v/{v}/pkg/ackwire_wasm.js\""),
            format!("href=\"/v/{v}/pkg/ackwire_wasm_bg.wasm\""),
            // The script's `import '/pkg/ackwire_wasm.js'` lands on the versioned bindings
            // (whose `import.meta.url` then fetches the versioned wasm).
            format!("\"/pkg/ackwire_wasm.js\":\"/v/{v}/pkg/ackwire_wasm.js\""),
            // Links to pages are left alone.
            "href=\"/\"".to_owned(),
            "href=\"/new\"".to_owned(),
        ] {
            assert!(page.contains(&url), "{path}: {url} not in\n{page}");
        }
        let script = if path == "/" { "index.js" } else { "room.js" };
        assert!(page.contains(&format!("src=\"/v/{v}/{script}\"")), "{page}");
        let map = page
            .find("<script type=\"importmap\">")
            .expect("an import map");
        assert!(
            map < page.find("<link").unwrap(),
            "the import map comes first"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn versioned_assets_are_immutable_with_the_files_bytes_and_unversioned_ones_no_cache() {
    let (_tmp, dir) = site_fixture();
    let server = Server::start({
        let dir = dir.clone();
        move |c| c.web_dir = Some(dir)
    })
    .await;
    let v = version_in(&server.get("/room/lobby").await.1);
    for (file, content_type) in [
        ("pkg/ackwire_wasm_bg.wasm", "application/wasm"),
        ("pkg/ackwire_wasm.js", "text/javascript"),
        ("room.js", "text/javascript"),
        ("style.css", "text/css"),
    ] {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let res = http_get_with(server.addr, &format!("/v/{v}/{file}"), &[]).await;
        assert_eq!(res.status, 200, "{file}");
        assert_eq!(
            res.header("cache-control").as_deref(),
            Some("public, max-age=31536000, immutable"),
            "{file}"
        );
        assert_eq!(
            res.header("content-type").as_deref(),
            Some(content_type),
            "{file}"
        );
        assert_eq!(res.body, bytes, "{file}");
        let old = http_get_with(server.addr, &format!("/{file}"), &[]).await;
        assert_eq!(old.status, 200, "/{file}");
        assert_eq!(
            old.header("cache-control").as_deref(),
            Some("no-cache"),
            "/{file}"
        );
        assert_eq!(old.body, bytes, "/{file}");
    }
    assert_eq!(server.get(&format!("/v/{v}/pkg/missing.js")).await.0, 404);
    server.stop().await;
}

#[tokio::test]
async fn a_page_or_asset_revalidated_unchanged_is_a_304() {
    let (_tmp, dir) = site_fixture();
    let server = Server::start(move |c| c.web_dir = Some(dir)).await;
    let page = http_get_with(server.addr, "/room/lobby", &[]).await;
    let v = version_in(&page.text());
    let asset = http_get_with(server.addr, &format!("/v/{v}/room.js"), &[]).await;
    for (path, etag) in [
        (
            "/room/lobby".to_owned(),
            page.header("etag").expect("page etag"),
        ),
        (
            format!("/v/{v}/room.js"),
            asset.header("etag").expect("asset etag"),
        ),
    ] {
        let res = http_get_with(server.addr, &path, &[("if-none-match", &etag)]).await;
        assert_eq!(res.status, 304, "{path}");
        assert!(res.body.is_empty());
        let res = http_get_with(server.addr, &path, &[("if-none-match", "W/\"other\"")]).await;
        assert_eq!(res.status, 200, "{path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn after_a_deploy_pages_point_at_a_new_version_and_the_old_one_is_never_immutable() {
    let (_tmp, dir) = site_fixture();
    let server = Server::start({
        let dir = dir.clone();
        move |c| c.web_dir = Some(dir)
    })
    .await;
    let old = version_in(&server.get("/room/lobby").await.1);
    let before = http_get_with(server.addr, &format!("/v/{old}/room.js"), &[]).await;
    assert_eq!(
        before.header("cache-control").as_deref(),
        Some("public, max-age=31536000, immutable")
    );

    // A deploy: one script changes on disk, the server keeps running.
    let deployed = "import init from '/pkg/ackwire_wasm.js'; init(); // v2\n";
    std::fs::write(dir.join("room.js"), deployed).unwrap();
    let new = version_in(&server.get("/room/lobby").await.1);
    assert_ne!(new, old);
    let current = http_get_with(server.addr, &format!("/v/{new}/room.js"), &[]).await;
    assert_eq!(
        current.header("cache-control").as_deref(),
        Some("public, max-age=31536000, immutable")
    );
    assert_eq!(current.text(), deployed);
    // The old version's URL (a page loaded before the deploy) still loads, with today's bytes,
    // but is not cacheable as that version: it never pins bytes that differ from it.
    for version in [old.as_str(), "0123456789abcdef", "not-a-version"] {
        let stale = http_get_with(server.addr, &format!("/v/{version}/room.js"), &[]).await;
        assert_eq!(stale.status, 200, "{version}");
        assert_eq!(
            stale.header("cache-control").as_deref(),
            Some("no-cache"),
            "{version}"
        );
        assert_eq!(stale.text(), deployed, "{version}");
    }
    // Files unchanged by the deploy are the same bytes under the new version.
    let wasm = http_get_with(
        server.addr,
        &format!("/v/{new}/pkg/ackwire_wasm_bg.wasm"),
        &[],
    )
    .await;
    assert_eq!(wasm.body, wasm_like_bytes());
    server.stop().await;
}

#[tokio::test]
async fn versioned_urls_cannot_escape_the_web_dir() {
    let (tmp, dir) = site_fixture();
    std::fs::write(tmp.path().join("secret.txt"), "secret").unwrap();
    let server = Server::start(move |c| c.web_dir = Some(dir)).await;
    let v = version_in(&server.get("/room/lobby").await.1);
    for path in [
        format!("/v/{v}/../secret.txt"),
        format!("/v/{v}/../../secret.txt"),
        format!("/v/{v}/%2e%2e/secret.txt"),
        format!("/v/{v}/pkg/../../secret.txt"),
        "/v/0000/../secret.txt".to_owned(),
        "/v/0000/%2e%2e/secret.txt".to_owned(),
        format!("/v/{v}//etc/passwd"),
    ] {
        let (status, body) = server.get(&path).await;
        assert_ne!(body, "secret", "{path} leaked a file outside the web dir");
        assert_ne!(status, 200, "{path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn the_embedded_copy_is_versioned_too() {
    // No --web-dir: the copy of web/ built in (debug builds read the repository's web/).
    let server = Server::start(|_| {}).await;
    let page = http_get_with(server.addr, "/room/lobby", &[]).await;
    assert_eq!(page.header("cache-control").as_deref(), Some("no-cache"));
    let v = version_in(&page.text());
    let style = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../web/style.css")).unwrap();
    let res = http_get_with(
        server.addr,
        &format!("/v/{v}/style.css"),
        &[("accept-encoding", "br")],
    )
    .await;
    assert_eq!(
        res.header("cache-control").as_deref(),
        Some("public, max-age=31536000, immutable")
    );
    assert_eq!(res.header("content-encoding").as_deref(), Some("br"));
    assert_eq!(decoded(&res), style);
    server.stop().await;
}

#[tokio::test]
async fn a_games_own_directory_is_served_under_its_path_and_nothing_hidden_or_outside() {
    let (tmp, web) = web_fixture();
    let game = tmp.path().join("pong");
    std::fs::create_dir_all(game.join("pkg")).unwrap();
    std::fs::write(game.join("index.html"), "<h1>pong</h1>").unwrap();
    std::fs::write(game.join("pong.js"), "export {};").unwrap();
    std::fs::write(game.join("pkg/pong.js"), "export const pkg = 1;").unwrap();
    std::fs::write(game.join(".env"), "secret").unwrap();
    std::fs::write(tmp.path().join("secret.txt"), "secret").unwrap();
    let mount = ackwire_signal::config::StaticDir {
        path: "/pong".into(),
        dir: game,
    };
    let server = Server::start(move |c| {
        c.web_dir = Some(web);
        c.statics = vec![mount];
    })
    .await;
    // The bare path sends the browser into the directory, keeping the room in the query.
    let bare = http_get_with(server.addr, "/pong?room=table", &[]).await;
    assert_eq!(bare.status, 308);
    assert_eq!(
        bare.header("location").as_deref(),
        Some("/pong/?room=table")
    );
    for (path, body) in [
        ("/pong/?room=table", "<h1>pong</h1>"),
        ("/pong/index.html", "<h1>pong</h1>"),
        ("/pong/pong.js", "export {};"),
        ("/pong/pkg/pong.js", "export const pkg = 1;"),
    ] {
        let res = http_get_with(server.addr, path, &[]).await;
        assert_eq!((res.status, res.text().as_str()), (200, body), "{path}");
        assert_eq!(
            res.header("cache-control").as_deref(),
            Some("no-cache"),
            "{path}"
        );
    }
    for path in [
        "/pong/.env",
        "/pong/%2eenv",
        "/pong/../secret.txt",
        "/pong/%2e%2e/secret.txt",
        "/pong/missing.js",
        "/pong/pkg",
    ] {
        let (status, body) = server.get(path).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
    // The server's own pages and assets are where they were.
    assert_eq!(
        server.get("/room/table").await,
        (200, "<h1>room page</h1>".into())
    );
    assert_eq!(
        server.get("/pkg/ackwire_wasm.js").await,
        (200, "export default 1;".into())
    );
    server.stop().await;
}
