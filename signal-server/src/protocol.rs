//! The server's side of the `/ws` frames. The frames themselves are the one schema in
//! `ackwire_room::signalling`, shared with the clients (`docs/signalling.md` is their
//! reference); here are the rules the server checks on top of the types, and the one way a
//! frame becomes text.

use ackwire_room::signalling::ServerFrame;
use axum::extract::ws::Utf8Bytes;

use crate::error::SignalError;

/// The error frame for `err`.
pub fn error_frame(err: &SignalError) -> ServerFrame<'static> {
    ServerFrame::Error {
        code: err.code().into(),
        message: err.to_string(),
    }
}

/// Serialize once; the result is cheap to clone for fan-out.
pub fn to_text(frame: &ServerFrame<'_>) -> Utf8Bytes {
    // Cannot fail: every map key is a string, and the server never builds `Other`.
    serde_json::to_string(frame)
        .expect("server frames serialize")
        .into()
}

/// Room names: 1–64 ASCII letters, digits, `-` or `_` (safe in URLs, logs and metrics).
pub fn validate_room_name(name: &str) -> Result<(), SignalError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(SignalError::InvalidRoomName(
            name.chars().take(80).collect(),
        ))
    }
}
