//! A real server on 127.0.0.1 and real WebSocket clients, shared by the test files.
#![allow(dead_code, unreachable_pub)]

pub mod redis;

use std::{net::SocketAddr, time::Duration};

use ackwire_signal::Config;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::{net::TcpStream, sync::oneshot, task::JoinHandle};
use tokio_tungstenite::{
    MaybeTlsStream, WebSocketStream, connect_async_with_config,
    tungstenite::{Message, protocol::CloseFrame},
};

/// How long a test waits for a frame that should arrive.
pub const WAIT: Duration = Duration::from_secs(5);

/// A server task on an ephemeral loopback port.
pub struct Server {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl Server {
    /// Start with the defaults, changed by `tweak`.
    pub async fn start(tweak: impl FnOnce(&mut Config)) -> Server {
        let mut config = Config {
            bind: "127.0.0.1:0".parse().unwrap(),
            ..Config::default()
        };
        tweak(&mut config);
        let listener = tokio::net::TcpListener::bind(config.bind).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(ackwire_signal::serve(listener, config, async {
            let _ = stopped.await;
        }));
        Server {
            addr,
            stop: Some(stop),
            task,
        }
    }

    pub async fn client(&self) -> Client {
        Client::connect(self.addr).await
    }

    /// A peer that joined `room` as a browser; returns it with its welcome.
    pub async fn peer(&self, room: &str) -> (Client, Value) {
        let mut c = self.client().await;
        let welcome = c.join(room).await;
        (c, welcome)
    }

    pub async fn get(&self, path: &str) -> (u16, String) {
        http_get(self.addr, path).await
    }

    /// The value of one metric line, e.g. `ackwire_signal_errors_total{code="not_joined"}`.
    pub async fn metric(&self, series: &str) -> f64 {
        let (_, body) = self.get("/metrics").await;
        body.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
            .unwrap_or(0.0)
    }

    /// Wait until `series` reads a value `done` accepts (polling `/metrics`), or panic after
    /// WAIT saying it never did `what`: how a test learns that the server has seen an event
    /// (a close, a drop, a join) it has no frame for.
    pub async fn metric_until(&self, series: &str, what: &str, done: impl Fn(f64) -> bool) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let read = self.metric(series).await;
            if done(read) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{series} never {what} (reads {read})"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Wait until `series` reads at least `value`.
    pub async fn metric_reaches(&self, series: &str, value: f64) {
        self.metric_until(series, &format!("reached {value}"), |v| v >= value)
            .await
    }

    /// Wait until `series` reads at most `value`.
    pub async fn metric_falls_to(&self, series: &str, value: f64) {
        self.metric_until(series, &format!("fell to {value}"), |v| v <= value)
            .await
    }

    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(WAIT, self.task)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}

/// Minimal HTTP/1.1 GET, so the tests need no HTTP client crate.
pub async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

pub struct Client {
    pub ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        // Without Nagle's algorithm, as browsers open their sockets.
        let (ws, _) = connect_async_with_config(format!("ws://{addr}/ws"), None, true)
            .await
            .unwrap();
        Client { ws }
    }

    /// A client whose connection comes from `local` (another loopback address, say, so the
    /// server sees another client address).
    pub async fn connect_from(addr: SocketAddr, local: std::net::IpAddr) -> Client {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::new(local, 0)).unwrap();
        let stream = socket.connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (ws, _) = tokio_tungstenite::client_async(
            format!("ws://{addr}/ws"),
            MaybeTlsStream::Plain(stream),
        )
        .await
        .unwrap();
        Client { ws }
    }

    pub async fn send(&mut self, v: Value) {
        self.ws.send(Message::text(v.to_string())).await.unwrap();
    }

    pub async fn send_raw(&mut self, text: &str) {
        self.ws.send(Message::text(text)).await.unwrap();
    }

    /// Next JSON frame; panics on timeout or close.
    pub async fn recv(&mut self) -> Value {
        match self.next_event(WAIT).await {
            Event::Json(v) => v,
            other => panic!("expected a JSON frame, got {other:?}"),
        }
    }

    /// Next frame whose `type` is `kind`, skipping others.
    pub async fn recv_type(&mut self, kind: &str) -> Value {
        loop {
            let v = self.recv().await;
            if v["type"] == kind {
                return v;
            }
        }
    }

    /// The next error frame's code.
    pub async fn error_code(&mut self) -> String {
        let v = self.recv_type("error").await;
        assert!(
            v["message"].as_str().is_some_and(|m| !m.is_empty()),
            "error without message: {v}"
        );
        v["code"].as_str().unwrap().to_owned()
    }

    pub async fn next_event(&mut self, wait: Duration) -> Event {
        loop {
            match tokio::time::timeout(wait, self.ws.next()).await {
                Err(_) => return Event::Timeout,
                Ok(None) => return Event::Closed(None),
                Ok(Some(Err(_))) => return Event::Closed(None),
                Ok(Some(Ok(Message::Text(t)))) => {
                    return Event::Json(serde_json::from_str(t.as_str()).unwrap());
                }
                Ok(Some(Ok(Message::Close(frame)))) => return Event::Closed(frame),
                Ok(Some(Ok(_))) => continue,
            }
        }
    }

    /// Nothing but pings arrives for `wait`.
    pub async fn assert_quiet(&mut self, wait: Duration) {
        match self.next_event(wait).await {
            Event::Timeout => {}
            other => panic!("expected silence, got {other:?}"),
        }
    }

    /// Wait until the server closes the connection; returns its close frame.
    pub async fn closed(&mut self) -> Option<CloseFrame> {
        loop {
            match self.next_event(WAIT).await {
                Event::Closed(frame) => return frame,
                Event::Timeout => panic!("server did not close the connection"),
                Event::Json(_) => {}
            }
        }
    }

    pub async fn join(&mut self, room: &str) -> Value {
        self.join_with(json!({"type": "join", "version": 1, "room": room, "kind": "browser"}))
            .await
    }

    /// Send this join frame; returns the welcome.
    pub async fn join_with(&mut self, join: Value) -> Value {
        self.send(join.clone()).await;
        let v = self.recv().await;
        assert_eq!(v["type"], "welcome", "{join} answered with {v}");
        v
    }

    /// Close cleanly (close frame, then wait for the end); true if the server answered
    /// with its own close frame, as the WebSocket closing handshake requires.
    pub async fn close(mut self) -> bool {
        self.ws.close(None).await.unwrap();
        let mut answered = false;
        while let Ok(Some(Ok(msg))) = tokio::time::timeout(WAIT, self.ws.next()).await {
            answered |= msg.is_close();
        }
        answered
    }
}

#[derive(Debug)]
pub enum Event {
    Json(Value),
    Closed(Option<CloseFrame>),
    Timeout,
}

pub fn peer_id(welcome: &Value) -> u64 {
    welcome["peer_id"].as_u64().unwrap()
}

/// The ids of the peers a welcome lists.
pub fn ids(welcome: &Value) -> Vec<u64> {
    welcome["peers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_u64().unwrap())
        .collect()
}

/// How a WebSocket upgrade went: a client, or the HTTP status it was refused with.
pub async fn upgrade(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Client, u16> {
    use tokio_tungstenite::tungstenite::{
        Error,
        client::IntoClientRequest,
        http::{HeaderName, HeaderValue},
    };
    let mut request = format!("ws://{addr}{path}").into_client_request().unwrap();
    for (name, value) in headers {
        request.headers_mut().insert(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    match connect_async_with_config(request, None, true).await {
        Ok((ws, _)) => Ok(Client { ws }),
        Err(Error::Http(response)) => Err(response.status().as_u16()),
        Err(other) => panic!("upgrade failed without an HTTP status: {other}"),
    }
}

impl Client {
    /// Wait for the server's close frame, then for the connection's end; panics unless the
    /// frame came and the end was orderly (no reset). Returns the frame.
    pub async fn closed_cleanly(&mut self) -> CloseFrame {
        let frame = loop {
            match tokio::time::timeout(WAIT, self.ws.next()).await {
                Err(_) => panic!("server did not close the connection"),
                Ok(Some(Ok(Message::Close(Some(frame))))) => break frame,
                Ok(Some(Ok(Message::Close(None)))) => panic!("close frame without a code"),
                Ok(Some(Ok(_))) => {}
                Ok(Some(Err(err))) => panic!("connection failed before a close frame: {err}"),
                Ok(None) => panic!("connection ended without a close frame"),
            }
        };
        match tokio::time::timeout(WAIT, self.ws.next()).await {
            Err(_) => panic!("server did not shut the socket after its close frame"),
            Ok(None) => frame,
            Ok(Some(other)) => panic!("after the close frame: {other:?}"),
        }
    }
}

/// An HTTP/1.1 response read whole: status, headers (names lower-case), body (de-chunked).
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// Every value of header `name`, joined with ", "; `None` when absent.
    pub fn header(&self, name: &str) -> Option<String> {
        let values: Vec<&str> = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect();
        (!values.is_empty()).then(|| values.join(", "))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// `GET path` with extra request headers over a plain TCP connection to `addr`.
pub async fn http_get_with(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> HttpResponse {
    http_exchange(TcpStream::connect(addr).await.unwrap(), path, headers).await
}

/// `GET path` with extra request headers over `stream` (plain TCP or TLS), `Connection:
/// close`; reads the response to the end of the connection.
pub async fn http_exchange<S>(mut stream: S, path: &str, headers: &[(&str, &str)]) -> HttpResponse
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    // A TLS peer may end without close_notify once the response is complete.
    match tokio::time::timeout(WAIT, stream.read_to_end(&mut raw)).await {
        Ok(Ok(_)) => {}
        Ok(Err(err)) if err.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Ok(Err(err)) => panic!("reading the response to {path}: {err}"),
        Err(_) => panic!("no complete response to {path}"),
    }
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("end of the response head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let line_end = rest
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("chunk size");
            let size_text = String::from_utf8_lossy(&rest[..line_end]).into_owned();
            let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
                .expect("hex chunk size");
            rest = &rest[line_end + 2..];
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
        body = out;
    }
    HttpResponse {
        status,
        headers,
        body,
    }
}

/// An offer then two candidates from `a` to `b`, as a negotiation sends them, each round
/// answered by `b`: the three reach `b` within 20 ms of each other, every round. With Nagle's
/// algorithm on the server's sockets the later ones wait for the delayed ACK (~40 ms) once
/// both sockets carry data both ways.
pub async fn assert_signals_not_held_back(a: &mut Client, b: &mut Client, ida: u64, idb: u64) {
    let sdp = "v=0 ".repeat(400);
    for round in 0..20 {
        a.send(json!({"type": "signal", "to": idb, "data": sdp}))
            .await;
        for i in 1..3 {
            a.send(json!({"type": "signal", "to": idb, "data": i}))
                .await;
        }
        let first = b.recv().await;
        let start = tokio::time::Instant::now();
        assert_eq!(first["data"], sdp);
        assert_eq!(b.recv().await["data"], 1);
        assert_eq!(b.recv().await["data"], 2);
        let spread = start.elapsed();
        assert!(
            spread < Duration::from_millis(20),
            "round {round}: {spread:?}"
        );
        b.send(json!({"type": "signal", "to": ida, "data": "answer"}))
            .await;
        assert_eq!(a.recv().await["data"], "answer");
    }
}

/// An `ackwire-signal` process on an ephemeral loopback port (so a test can signal or kill
/// it), its log lines (colour codes removed) forwarded to `log`. Killed on drop.
pub struct Process {
    pub child: tokio::process::Child,
    pub addr: SocketAddr,
    pub log: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Process {
    /// Starts the binary with `args` besides `--bind 127.0.0.1:0`; returns once it listens.
    pub async fn start<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Process {
        Process::start_with_env(args, &[]).await
    }

    /// [`Process::start`] with these environment variables too (`RUST_LOG` is `info` unless
    /// given).
    pub async fn start_with_env<S: AsRef<std::ffi::OsStr>>(
        args: &[S],
        env: &[(&str, &str)],
    ) -> Process {
        use tokio::io::{AsyncBufReadExt, BufReader};
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_ackwire-signal"))
            .args(["--bind", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .env("NO_COLOR", "1")
            .stderr(std::process::Stdio::piped())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let (tx, log) = tokio::sync::mpsc::unbounded_channel();
        // Read to the end whether or not anyone listens: a full pipe would stall the server.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = tx.send(without_colours(&line));
            }
        });
        let mut process = Process {
            child,
            addr: "0.0.0.0:0".parse().unwrap(),
            log,
        };
        let listening = process.logged("listening addr=").await;
        let addr = listening.split("listening addr=").nth(1).unwrap();
        process.addr = addr.split_whitespace().next().unwrap().parse().unwrap();
        process
    }

    /// The next log line containing `what` (panics after [`WAIT`]).
    pub async fn logged(&mut self, what: &str) -> String {
        let found = async {
            while let Some(line) = self.log.recv().await {
                if line.contains(what) {
                    return line;
                }
            }
            panic!("the server exited before logging {what:?}");
        };
        tokio::time::timeout(WAIT, found).await.expect(what)
    }

    /// Sends the process `signal` (`HUP`, `KILL`, ...), as `kill -SIGNAL` would.
    pub fn signal(&self, signal: &str) {
        let status = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().unwrap().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

/// A log line without its terminal colour codes.
fn without_colours(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|c| *c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}
