//! The signalling WebSocket, one connection at a time. The room member decides when to open
//! one (and when to try again); this task only connects, forwards text frames both ways and
//! says when the socket opened or closed.

use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// Frames the member may queue for the server before further ones are dropped (stats are
/// resent every second anyway; a lost signal shows up as a link attempt that times out and
/// starts over).
const OUTBOX: usize = 256;

/// What a socket tells the driver, tagged with the socket's number.
#[derive(Debug, Clone)]
pub enum SocketEvent {
    /// Connected: the member may join.
    Open,
    /// A text frame from the server.
    Frame(String),
    /// Closed or could not connect; no more events from this socket.
    Closed(String),
}

/// One signalling connection. Dropping it closes the WebSocket cleanly (the room hears
/// `peer_left` at once).
#[derive(Debug)]
pub struct Socket {
    frames: mpsc::Sender<String>,
}

impl Socket {
    /// Connects to `ws_url` in a task; events go to `events` tagged with `number`.
    pub fn open(
        ws_url: String,
        number: u64,
        events: mpsc::UnboundedSender<(u64, SocketEvent)>,
    ) -> Socket {
        let (frames, outgoing) = mpsc::channel(OUTBOX);
        tokio::spawn(async move {
            if let Some(reason) = run(&ws_url, outgoing, &events, number).await {
                let _ = events.send((number, SocketEvent::Closed(reason)));
            }
        });
        Socket { frames }
    }

    /// Queues a frame; false if the queue is full (the frame is dropped).
    pub fn send(&self, text: String) -> bool {
        self.frames.try_send(text).is_ok()
    }
}

/// Runs one connection; returns why it closed, or `None` if the driver let go of it.
async fn run(
    ws_url: &str,
    mut outgoing: mpsc::Receiver<String>,
    events: &mpsc::UnboundedSender<(u64, SocketEvent)>,
    number: u64,
) -> Option<String> {
    let mut ws = match tokio_tungstenite::connect_async(ws_url).await {
        Ok((ws, _)) => ws,
        Err(e) => return Some(format!("connect {ws_url}: {e}")),
    };
    // Signalling frames are small and latency-bound: no Nagle delay on them.
    if let tokio_tungstenite::MaybeTlsStream::Plain(tcp) = ws.get_ref() {
        let _ = tcp.set_nodelay(true);
    }
    events.send((number, SocketEvent::Open)).ok()?;
    loop {
        tokio::select! {
            frame = outgoing.recv() => {
                let Some(text) = frame else {
                    let _ = ws.close(None).await;
                    return None;
                };
                if let Err(e) = ws.send(Message::text(text)).await {
                    return Some(e.to_string());
                }
            }
            message = ws.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    events.send((number, SocketEvent::Frame(text.to_string()))).ok()?;
                }
                Some(Ok(Message::Close(close))) => {
                    return Some(format!("closed by the server: {close:?}"));
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Some(e.to_string()),
                None => return Some("stream ended".into()),
            },
        }
    }
}
