//! One WebSocket per link attempt to a host room's host (a [`TransportId`]): the last resort,
//! for a browser without WebRTC or a network that blocks UDP. Each binary message carries one
//! of the core's packets, both ways; its events go to the member.

use std::rc::Rc;

use ackwire_room::member::{Route, TransportEvent, TransportId};
use ackwire_signalling::{SignalData, WebTransportInfo};
use js_sys::Uint8Array;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{BinaryType, MessageEvent, WebSocket};

use super::{Shared, State, ToHost, deliver, js_err, now, tell, token};

/// Bytes a socket may hold unsent before a packet is dropped rather than queued: about two
/// seconds of a link's traffic (30 packets a second of at most 1200 bytes). Behind a stalled
/// TCP stream more queueing only adds delay: the core resends reliable messages itself, and a
/// late unreliable one is worth nothing.
const MAX_BUFFERED: u32 = 64 * 1024;

/// One WebSocket to the host.
pub(super) struct Socket {
    ws: WebSocket,
    /// Browser callbacks must outlive the socket they are attached to.
    _callbacks: [Box<dyn std::any::Any>; 2],
}

impl Socket {
    /// Sends one packet, unless the socket is not open or its queue is full
    /// ([`MAX_BUFFERED`]): then it is lost, as on a congested path.
    pub(super) fn send(&self, packet: &[u8]) {
        if self.ws.ready_state() == WebSocket::OPEN && self.ws.buffered_amount() <= MAX_BUFFERED {
            let _ = self.ws.send_with_u8_array(packet);
        }
    }

    /// Closes it. The browser may still fire its events afterwards, so the handlers are
    /// detached first: their closures are dropped with this struct.
    pub(super) fn shut_down(self) {
        self.ws.set_onopen(None);
        self.ws.set_onmessage(None);
        self.ws.set_onclose(None);
        let _ = self.ws.close();
    }
}

/// Makes the link's token and hands it to the member (which relays it to the host), then
/// dials the host's WebSocket with it: the member's `OpenWebSocket` (`Carry::run_command`,
/// which closes sockets too).
pub(super) fn open(
    state: &mut State,
    shared: &Shared,
    transport: TransportId,
    service: &WebTransportInfo,
) -> Result<(), String> {
    let token = token()?;
    let url = service
        .websocket_url(&token)
        .ok_or("the host serves no WebSocket")?;
    let signal = SignalData::WebSocket { websocket: token };
    state
        .member
        .handle_transport(now(), transport, TransportEvent::LocalSignal(signal));
    // A page served over https may not open a `ws://` URL: the constructor throws.
    let ws = WebSocket::new(&url).map_err(|e| js_err("WebSocket", e))?;
    ws.set_binary_type(BinaryType::Arraybuffer);
    let socket = attach(shared, transport, ws);
    state.to_host.push((transport, ToHost::Socket(socket)));
    Ok(())
}

/// Our handlers on the socket of `transport`: its open, messages and close go to the member.
/// A socket that closes before it opened failed (the browser's `error` event, which comes
/// first, says no more than the close does: 1006, whatever went wrong).
fn attach(shared: &Shared, transport: TransportId, ws: WebSocket) -> Socket {
    let weak = Rc::downgrade(shared);
    // One handler for the open and the close (one closure less in the bundle): the socket's
    // state tells which came.
    let mut opened = false;
    let on_change = Closure::<dyn FnMut()>::new({
        let (weak, ws) = (weak.clone(), ws.clone());
        move || {
            let event = if ws.ready_state() == WebSocket::OPEN {
                opened = true;
                TransportEvent::ChannelOpen
            } else if opened {
                TransportEvent::ChannelClosed
            } else {
                TransportEvent::Failed("the host's WebSocket closed before it opened".into())
            };
            tell(&weak, transport, event);
        }
    });
    // A text message is none of the host's: it is ignored (a number in it would make a
    // `Uint8Array` of that length).
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        let data = event.data();
        if !data.is_string() {
            let packet = Uint8Array::new(&data).to_vec();
            deliver(&weak, Route::WebSocket(transport), &packet);
        }
    });
    ws.set_onopen(Some(on_change.as_ref().unchecked_ref()));
    ws.set_onclose(Some(on_change.as_ref().unchecked_ref()));
    ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    Socket {
        ws,
        _callbacks: [Box::new(on_change), Box::new(on_message)],
    }
}

#[cfg(test)]
mod tests;
