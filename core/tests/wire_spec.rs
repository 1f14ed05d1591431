//! Holds the codec to the worked examples in `docs/wire.md`, byte for byte.

use ackwire_core::control::{ControlPacket, Cookie};
use ackwire_core::frame::{FrameKind, FrameRepr};
use ackwire_core::wire::PacketHeader;

const SPEC: &str = include_str!("../../docs/wire.md");

/// The `bytes => fields` lines of the fenced block tagged `tag`.
fn block(tag: &str) -> Vec<(Vec<u8>, Vec<&'static str>)> {
    SPEC.split(&format!("```{tag}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("docs/wire.md has a {tag} block"))
        .split("```")
        .next()
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let (hex, fields) = line.split_once("=>").expect("`bytes => fields`");
            (
                unhex(&hex.replace(' ', "")),
                fields.split_whitespace().collect(),
            )
        })
        .collect()
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn array<const N: usize>(hex: &str) -> [u8; N] {
    unhex(hex).try_into().unwrap()
}

fn examples() -> Vec<(Vec<u8>, PacketHeader)> {
    block("wire-example")
        .into_iter()
        .map(|(bytes, fields)| {
            let bits = fields[2].trim_start_matches("0x");
            let header = PacketHeader {
                sequence: fields[0].parse().unwrap(),
                ack: fields[1].parse().unwrap(),
                ack_bits: u32::from_str_radix(bits, 16).unwrap(),
            };
            (bytes, header)
        })
        .collect()
}

#[test]
fn every_documented_example_decodes_and_encodes_byte_for_byte() {
    let examples = examples();
    assert_eq!(examples.len(), 5, "docs/wire.md lost an example");
    for (bytes, header) in examples {
        assert_eq!(
            PacketHeader::decode(&bytes),
            Ok((header, bytes.len())),
            "decoding {bytes:02X?}"
        );
        let mut buf = [0u8; PacketHeader::MAX_LEN];
        let len = header.encode(&mut buf).unwrap();
        assert_eq!(&buf[..len], &bytes[..], "encoding {header:?}");
    }
}

#[test]
fn the_explained_example_means_what_the_table_says() {
    // The byte-by-byte walk-through in docs/wire.md.
    let (header, len) = PacketHeader::decode(&[0x53, 0x12, 0x34, 0x04, 0xFB, 0x7F]).unwrap();
    assert_eq!(len, 6);
    assert_eq!(header.sequence, 4660);
    assert_eq!(header.ack, 4656);
    let received = |seq: u16| {
        let n = header.ack.wrapping_sub(seq);
        n < 32 && header.ack_bits & (1 << n) != 0
    };
    assert!(!received(4654));
    assert!(!received(4641));
    assert!(
        (4625..=4656)
            .filter(|&s| s != 4654 && s != 4641)
            .all(received)
    );
    assert!(!received(4624));
}

#[test]
fn every_documented_message_frame_parses_and_emits_byte_for_byte() {
    let examples = block("frame-example");
    assert_eq!(examples.len(), 4, "docs/wire.md lost a frame example");
    for (bytes, fields) in examples {
        let num = |i: usize| fields[i].parse::<u16>().unwrap();
        let kind = match fields[1] {
            "unreliable" => FrameKind::Unreliable,
            "sequenced" => FrameKind::Sequenced { sequence: num(2) },
            "reliable" => FrameKind::Reliable { id: num(2) },
            "fragment" => FrameKind::Fragment {
                id: num(2),
                index: num(3) as u8,
                last: num(4) as u8,
            },
            other => panic!("unknown kind {other}"),
        };
        let payload = unhex(fields.last().unwrap());
        let frame = FrameRepr {
            channel: num(0) as u8,
            kind,
            payload: &payload,
        };
        assert_eq!(
            FrameRepr::parse(&bytes),
            Ok((frame, bytes.len())),
            "{bytes:02X?}"
        );
        let mut buf = vec![0u8; bytes.len()];
        assert_eq!(frame.emit(&mut buf), Ok(bytes.len()));
        assert_eq!(buf, bytes, "emitting {frame:?}");
    }
}

#[test]
fn every_documented_control_packet_parses_and_emits_byte_for_byte() {
    let examples = block("control-example");
    assert_eq!(examples.len(), 5, "docs/wire.md lost a control example");
    for (bytes, fields) in examples {
        let field = |name: &str| {
            fields[1..]
                .iter()
                .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
                .unwrap_or_else(|| panic!("{name} missing"))
        };
        let hex_u64 = |name: &str| u64::from_str_radix(field(name), 16).unwrap();
        let cookie = || Cookie {
            timestamp_ms: field("timestamp_ms").parse().unwrap(),
            nonce: array(field("nonce")),
            mac: array(field("mac")),
        };
        let packet = match fields[0] {
            "connect-request" => ControlPacket::ConnectRequest {
                protocol_id: hex_u64("protocol_id"),
            },
            "challenge" => ControlPacket::Challenge { cookie: cookie() },
            "connect-response" => ControlPacket::ConnectResponse {
                protocol_id: hex_u64("protocol_id"),
                cookie: cookie(),
            },
            "accepted" => ControlPacket::Accepted {
                connection_id: hex_u64("connection_id"),
            },
            "disconnect" => ControlPacket::Disconnect {
                connection_id: hex_u64("connection_id"),
            },
            other => panic!("unknown control packet {other}"),
        };
        assert_eq!(ControlPacket::parse(&bytes), Ok(packet), "{bytes:02X?}");
        let mut buf = vec![0u8; bytes.len()];
        assert_eq!(packet.emit(&mut buf), Ok(bytes.len()));
        assert_eq!(buf, bytes, "emitting {packet:?}");
    }
}

#[test]
fn the_documented_default_protocol_id_is_the_one_in_the_code() {
    assert_eq!(
        ackwire_core::connection::DEFAULT_PROTOCOL_ID,
        0x61636B7769726501
    );
    assert!(SPEC.contains("`61 63 6B 77 69 72 65 01`"));
}
