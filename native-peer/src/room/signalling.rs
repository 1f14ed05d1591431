//! The room's signalling client: the `/ws` messages a native peer sends and understands
//! (schema: `docs/signalling.md`), and one task that keeps the WebSocket up.
//!
//! The task joins, forwards every server frame to the room driver, and sends what the driver
//! queues. When the socket drops it reconnects with growing delays (250 ms up to 4 s) and
//! resumes its peer id with the welcome's token; if the server no longer knows the id (it
//! restarted, or the grace period ran out) it joins afresh. Links between peers never pass
//! through here, so they keep flowing while signalling is down.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

pub use ackwire_room::signalling::{
    IceServer, Incoming, Outgoing, PeerInfo, Resume, Sdp, SignalData, VERSION,
};

/// First reconnect delay; doubled after each failed attempt up to [`MAX_RECONNECT_DELAY`].
const FIRST_RECONNECT_DELAY: Duration = Duration::from_millis(250);
/// Longest wait between reconnect attempts.
const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(4);
/// Frames the driver may queue for the server before further ones are dropped (stats are
/// resent every second anyway; a signal dropped here shows up as a link that never opens).
const OUTBOX: usize = 256;

/// What the signalling task tells the driver.
#[derive(Debug, Clone)]
pub enum SignallingEvent {
    /// A frame from the server.
    Frame(Incoming),
    /// The WebSocket dropped or could not be opened; the task is retrying.
    Down {
        /// Why, for the log.
        reason: String,
    },
}

/// Where to join and as what.
#[derive(Debug, Clone)]
pub struct JoinRequest {
    /// `ws://host:port/ws` or `wss://host/ws`.
    pub ws_url: String,
    /// Room name.
    pub room: String,
    /// Our advertised UDP address.
    pub udp_addr: Option<String>,
}

/// Starts the signalling task. Frames for the server go into the returned sender; what the
/// server says comes out of the receiver. Dropping the sender ends the task (after a clean
/// close of the WebSocket, so the room hears `peer_left` at once).
pub fn spawn(
    request: JoinRequest,
) -> (
    mpsc::Sender<Outgoing>,
    mpsc::Receiver<SignallingEvent>,
    tokio::task::JoinHandle<()>,
) {
    let (out_tx, out_rx) = mpsc::channel(OUTBOX);
    let (in_tx, in_rx) = mpsc::channel(OUTBOX);
    let task = tokio::spawn(run(request, out_rx, in_tx));
    (out_tx, in_rx, task)
}

async fn run(
    request: JoinRequest,
    mut outgoing: mpsc::Receiver<Outgoing>,
    events: mpsc::Sender<SignallingEvent>,
) {
    let mut resume: Option<Resume> = None;
    let mut delay = FIRST_RECONNECT_DELAY;
    loop {
        let reason = match session(&request, &mut resume, &mut outgoing, &events).await {
            Ended::DriverGone => return,
            Ended::Dropped { reason, was_up } => {
                if was_up {
                    delay = FIRST_RECONNECT_DELAY;
                }
                reason
            }
        };
        tracing::warn!(%reason, retry_in_ms = delay.as_millis() as u64, "signalling down");
        if events.send(SignallingEvent::Down { reason }).await.is_err() {
            return;
        }
        // Frames queued while down are stale (stats) or useless (signals to a peer that will
        // be renegotiated): drop them, but notice the driver leaving.
        let wait = tokio::time::sleep(delay);
        tokio::pin!(wait);
        loop {
            tokio::select! {
                () = &mut wait => break,
                frame = outgoing.recv() => if frame.is_none() { return },
            }
        }
        delay = (delay * 2).min(MAX_RECONNECT_DELAY);
    }
}

enum Ended {
    DriverGone,
    Dropped { reason: String, was_up: bool },
}

fn join_frame(request: &JoinRequest, resume: Option<Resume>) -> Outgoing {
    Outgoing::Join {
        version: VERSION,
        room: request.room.clone(),
        kind: "native",
        udp_addr: request.udp_addr.clone(),
        resume,
    }
}

/// One WebSocket connection, from connect to drop.
async fn session(
    request: &JoinRequest,
    resume: &mut Option<Resume>,
    outgoing: &mut mpsc::Receiver<Outgoing>,
    events: &mpsc::Sender<SignallingEvent>,
) -> Ended {
    let (mut ws, _) = match tokio_tungstenite::connect_async(request.ws_url.as_str()).await {
        Ok(ok) => ok,
        Err(e) => {
            return Ended::Dropped {
                reason: format!("connect {}: {e}", request.ws_url),
                was_up: false,
            };
        }
    };
    let encode = |frame: &Outgoing| serde_json::to_string(frame).map(Message::text);
    let join = join_frame(request, resume.clone());
    if let Err(reason) = send(&mut ws, encode(&join)).await {
        return Ended::Dropped {
            reason,
            was_up: false,
        };
    }
    let mut welcomed = false;
    loop {
        tokio::select! {
            frame = outgoing.recv() => {
                let Some(frame) = frame else {
                    let _ = ws.close(None).await;
                    return Ended::DriverGone;
                };
                if let Err(reason) = send(&mut ws, encode(&frame)).await {
                    return Ended::Dropped { reason, was_up: welcomed };
                }
            }
            message = ws.next() => {
                let text = match message {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(close))) => {
                        return Ended::Dropped { reason: format!("closed by server: {close:?}"), was_up: welcomed };
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => return Ended::Dropped { reason: e.to_string(), was_up: welcomed },
                    None => return Ended::Dropped { reason: "stream ended".into(), was_up: welcomed },
                };
                let frame = match serde_json::from_str::<Incoming>(&text) {
                    Ok(frame) => frame,
                    Err(e) => {
                        tracing::warn!(error = %e, "unreadable frame from the signalling server");
                        continue;
                    }
                };
                match &frame {
                    Incoming::Welcome { peer_id, token, .. } => {
                        welcomed = true;
                        *resume = Some(Resume { peer_id: *peer_id, token: token.clone() });
                    }
                    Incoming::Error { code, .. } if code == "resume_rejected" => {
                        // The server forgot us (restart, or grace expired): start over.
                        *resume = None;
                        if let Err(reason) = send(&mut ws, encode(&join_frame(request, None))).await {
                            return Ended::Dropped { reason, was_up: false };
                        }
                    }
                    _ => {}
                }
                if events.send(SignallingEvent::Frame(frame)).await.is_err() {
                    let _ = ws.close(None).await;
                    return Ended::DriverGone;
                }
            }
        }
    }
}

async fn send<S>(ws: &mut S, message: Result<Message, serde_json::Error>) -> Result<(), String>
where
    S: SinkExt<Message> + Unpin,
    S::Error: std::fmt::Display,
{
    let message = message.map_err(|e| e.to_string())?;
    ws.send(message).await.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_join_carries_the_udp_address_and_a_resume_only_when_given() {
        let request = JoinRequest {
            ws_url: "ws://127.0.0.1:1/ws".into(),
            room: "lobby".into(),
            udp_addr: Some("127.0.0.1:40000".into()),
        };
        assert_eq!(
            serde_json::to_string(&join_frame(&request, None)).unwrap(),
            r#"{"type":"join","version":1,"room":"lobby","kind":"native","udp_addr":"127.0.0.1:40000"}"#
        );
        let resume = Resume {
            peer_id: 7,
            token: "ab".into(),
        };
        assert_eq!(
            serde_json::to_string(&join_frame(&request, Some(resume))).unwrap(),
            r#"{"type":"join","version":1,"room":"lobby","kind":"native","udp_addr":"127.0.0.1:40000","resume":{"peer_id":7,"token":"ab"}}"#
        );
    }

    #[test]
    fn welcome_with_natives_and_ice_servers_parses() {
        let text = r#"{"type":"welcome","version":1,"room":"lobby","peer_id":7,"token":"5f","resumed":false,
            "peers":[{"id":3,"kind":"native","udp_addr":"127.0.0.1:40000"},{"id":4,"kind":"browser"}],
            "ice_servers":[{"urls":["stun:stun.example.org:3478"]}]}"#;
        let Incoming::Welcome {
            peers, ice_servers, ..
        } = serde_json::from_str(text).unwrap()
        else {
            panic!("not a welcome");
        };
        assert_eq!(peers[0].udp_addr.as_deref(), Some("127.0.0.1:40000"));
        assert_eq!(peers[1].udp_addr, None);
        assert_eq!(ice_servers[0].urls, ["stun:stun.example.org:3478"]);
        let one: IceServer = serde_json::from_str(
            r#"{"urls":"turn:t.example.org","username":"u","credential":"c"}"#,
        )
        .unwrap();
        assert_eq!(one.urls, ["turn:t.example.org"]);
        assert_eq!((one.username.as_str(), one.credential.as_str()), ("u", "c"));
    }

    #[test]
    fn browser_signal_payloads_parse_and_candidates_serialize_like_a_browser() {
        let offer: SignalData =
            serde_json::from_str(r#"{"sdp":{"type":"offer","sdp":"v=0"}}"#).unwrap();
        assert!(matches!(offer, SignalData::Sdp { ref sdp } if sdp.kind == "offer"));
        let candidate = SignalData::Candidate {
            candidate: "candidate:1 1 udp 1 127.0.0.1 5000 typ host".into(),
            sdp_mid: Some("0".into()),
            sdp_m_line_index: Some(0),
        };
        assert_eq!(
            serde_json::to_string(&candidate).unwrap(),
            r#"{"candidate":"candidate:1 1 udp 1 127.0.0.1 5000 typ host","sdpMid":"0","sdpMLineIndex":0}"#
        );
        assert!(serde_json::from_str::<SignalData>(r#"{"nonsense":1}"#).is_err());
    }
}
