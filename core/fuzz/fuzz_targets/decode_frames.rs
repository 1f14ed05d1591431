//! Any bytes: the message-frame and control-packet decoders return a value or a typed error,
//! never panic, and every accepted input re-encodes to exactly the bytes it was read from.
#![no_main]

use ackwire_core::control::ControlPacket;
use ackwire_core::frame::Frames;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut at = 0;
    for frame in Frames::new(data) {
        let Ok(frame) = frame else { break };
        let mut buf = vec![0u8; frame.encoded_len()];
        assert_eq!(frame.emit(&mut buf), Ok(buf.len()));
        assert_eq!(&buf[..], &data[at..at + buf.len()]);
        at += buf.len();
    }
    if let Ok(packet) = ControlPacket::parse(data) {
        // Sized by the packet itself: the secure handshake packets are up to 89 bytes.
        let mut buf = vec![0u8; packet.encoded_len()];
        assert_eq!(packet.emit(&mut buf), Ok(data.len()));
        assert_eq!(&buf[..], data);
    }
});
