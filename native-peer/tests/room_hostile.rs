//! A hostile room member: a WebSocket client that joins as a browser and relays garbage
//! signals to a native peer. Every one is refused without harm: the native keeps running, its
//! UDP link to another native keeps flowing, and no link to the impostor ever connects.
//!
//! The native does start a WebRTC session for the impostor; its ICE gathers only on
//! 127.0.0.1 (the tests' `--bind 127.0.0.1:0` sets the ICE address) with mDNS off.

mod room_support;

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use room_support::{Server, acked, blocking, link_state, linked_pair};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_signals_from_an_impostor_change_nothing_and_links_keep_flowing() {
    let server = Server::start("127.0.0.1:0".parse().unwrap()).await;
    let url = server.room_url("hostile");
    let (a, b, a_id, b_id) = blocking(move || linked_pair(&url)).await;

    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", server.addr))
        .await
        .unwrap();
    // It plays the room's application (the demo's), or the server would refuse it.
    let app = json!({"id": "ackwire-demo", "version": 1, "channels": ["unreliable-sequenced", "reliable-ordered"]});
    let join =
        json!({"type": "join", "version": 1, "room": "hostile", "kind": "browser", "app": app});
    ws.send(Message::text(join.to_string())).await.unwrap();
    let welcome: Value = loop {
        if let Some(Ok(Message::Text(text))) = ws.next().await {
            let value: Value = serde_json::from_str(&text).unwrap();
            assert_ne!(value["type"], "error", "{value}");
            if value["type"] == "welcome" {
                break value;
            }
        }
    };
    let impostor = welcome["peer_id"].as_u64().unwrap();
    let garbage = [
        json!({"sdp": {"type": "offer", "sdp": "not an sdp"}}),
        json!({"sdp": {"type": "rollback", "sdp": ""}}),
        json!({"sdp": {"type": "answer", "sdp": "v=0\r\n"}}),
        json!({"candidate": "candidate:garbage", "sdpMid": "0", "sdpMLineIndex": 0}),
        json!({"candidate": 7}),
        json!({"nonsense": true}),
        json!("just a string"),
        json!({"sdp": {"type": "offer", "sdp": "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n"}}),
    ];
    for data in &garbage {
        let signal = json!({"type": "signal", "to": a_id, "data": data});
        ws.send(Message::text(signal.to_string())).await.unwrap();
    }

    let (mut a, b) = blocking(move || {
        let mut a = a;
        let from = a.seen.len();
        let before = acked(
            &a.wait_for("stats", Duration::from_secs(3), |l| acked(l, b_id) > 0),
            b_id,
        );
        a.wait_for("acks after the garbage", Duration::from_secs(8), |l| {
            acked(l, b_id) >= before + 30
        });
        assert!(
            a.seen[from..]
                .iter()
                .all(|l| !link_state(l, impostor, "connected")),
            "no link to the impostor connected"
        );
        (a, b)
    })
    .await;
    assert!(a.is_running(), "the native survived the garbage");

    // The impostor leaves: the native forgets it at once.
    ws.close(None).await.unwrap();
    let a = blocking(move || {
        a.wait_for("the impostor leaving", Duration::from_secs(5), |l| {
            l["type"] == "peer-left" && l["peer_id"] == impostor
        });
        a
    })
    .await;
    drop((a, b));
    server.stop().await;
}
