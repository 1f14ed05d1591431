//! Any bytes: the header decoder returns a header or a typed error, never panics, and every
//! accepted input re-encodes to exactly the bytes it was read from.
#![no_main]

use ackwire_core::wire::PacketHeader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((header, len)) = PacketHeader::decode(data) {
        let mut buf = [0u8; PacketHeader::MAX_LEN];
        let written = header.encode(&mut buf).expect("MAX_LEN always fits");
        assert_eq!(written, len);
        assert_eq!(&buf[..len], &data[..len]);
    }
});
