//! The server's side of the `/ws` frames. The frames themselves are the one schema in
//! `ackwire_signalling`, shared with the clients (`docs/signalling.md` is their
//! reference); here are the rules the server checks on top of the types, and the one way a
//! frame becomes text.

use ackwire_signalling::{ServerFrame, is_valid_name};
use axum::extract::ws::Utf8Bytes;

use crate::error::SignalError;

/// The error frame for `err`.
pub fn error_frame(err: &SignalError) -> ServerFrame<'static> {
    ServerFrame::Error {
        code: err.code(),
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

/// Room names: 1–64 of `A-Z a-z 0-9 - _` (the one name rule, [`is_valid_name`]).
pub fn validate_room_name(name: &str) -> Result<(), SignalError> {
    if is_valid_name(name) {
        Ok(())
    } else {
        Err(SignalError::InvalidRoomName(
            name.chars().take(80).collect(),
        ))
    }
}

/// A join's program instance id: 1–64 of `A-Z a-z 0-9 - _`, like a room name.
pub fn validate_instance(instance: &str) -> Result<(), SignalError> {
    if is_valid_name(instance) {
        Ok(())
    } else {
        Err(SignalError::InvalidInstance(
            instance.chars().take(80).collect(),
        ))
    }
}
