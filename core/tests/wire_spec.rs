//! Holds the codec to the worked examples in `docs/wire.md`, byte for byte.

use std::time::Duration;

use ackwire_core::control::{ControlPacket, Cookie};
use ackwire_core::frame::{FrameKind, FrameRepr, Frames};
use ackwire_core::wire::{AckDelay, AckField, PacketHeader};
use ackwire_core::{Accept, Acceptor, Connection, ConnectionConfig};

const SPEC: &str = include_str!("../../docs/wire.md");

/// The non-empty lines of the fenced block tagged `tag`.
fn fenced(tag: &str) -> impl Iterator<Item = &'static str> {
    SPEC.split(&format!("```{tag}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("docs/wire.md has a {tag} block"))
        .split("```")
        .next()
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
}

/// The `bytes => fields` lines of the fenced block tagged `tag`.
fn block(tag: &str) -> Vec<(Vec<u8>, Vec<&'static str>)> {
    fenced(tag)
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

/// A header from its `name=value` fields.
fn header(fields: &[&str]) -> PacketHeader {
    let field = |name: &str| {
        fields
            .iter()
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    let ack = match field("ack").split_once(':') {
        Some(("low", low)) => AckField::Low(u8::from_str_radix(low, 16).unwrap()),
        Some(("full", full)) => AckField::Full(full.parse().unwrap()),
        other => panic!("ack {other:?}"),
    };
    PacketHeader {
        sequence: field("sequence").parse().unwrap(),
        ack,
        ack_bits: u32::from_str_radix(field("ack_bits").trim_start_matches("0x"), 16).unwrap(),
        ack_delay: AckDelay(field("ack_delay").parse().unwrap()),
    }
}

fn examples() -> Vec<(Vec<u8>, PacketHeader)> {
    block("wire-example")
        .into_iter()
        .map(|(bytes, fields)| (bytes, header(&fields)))
        .collect()
}

/// A frame from `channel kind [id [index last]] payload-hex`; the payload is returned apart,
/// as the frame borrows it.
fn frame_fields(fields: &[&str]) -> (u8, FrameKind, Vec<u8>) {
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
    (num(0) as u8, kind, unhex(fields.last().unwrap()))
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
fn every_documented_ack_resolution_holds() {
    let lines: Vec<&str> = SPEC
        .split("```ack-resolve-example\n")
        .nth(1)
        .expect("docs/wire.md has an ack-resolve-example block")
        .split("```")
        .next()
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 4, "docs/wire.md lost an ack example");
    for line in lines {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [low, newest, "=>", ack] = fields[..] else {
            panic!("`low newest => ack`, got {line:?}")
        };
        let low = u8::from_str_radix(low, 16).unwrap();
        let (newest, ack): (u16, u16) = (newest.parse().unwrap(), ack.parse().unwrap());
        assert_eq!(AckField::Low(low).resolve(newest), ack, "{line}");
        // And a sender holding `newest` as the peer's known ack picks this very byte.
        assert_eq!(
            AckField::for_ack(ack, Some(newest)),
            AckField::Low(low),
            "{line}"
        );
    }
}

#[test]
fn the_explained_example_means_what_the_table_says() {
    // The byte-by-byte walk-through in docs/wire.md.
    let (header, len) = PacketHeader::decode(&[0x93, 0x12, 0x34, 0x30, 0x02, 0xFB, 0x7F]).unwrap();
    assert_eq!(len, 7);
    assert_eq!(header.sequence, 4660);
    let ack = header.ack.resolve(4600);
    assert_eq!(ack, 4656);
    assert_eq!(
        header.ack_delay.duration(),
        Some(std::time::Duration::from_millis(1))
    );
    let received = |seq: u16| {
        let n = ack.wrapping_sub(seq);
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
        let (channel, kind, payload) = frame_fields(&fields);
        let frame = FrameRepr {
            channel,
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
fn every_documented_data_packet_decodes_and_encodes_byte_for_byte() {
    let examples = block("packet-example");
    assert_eq!(examples.len(), 2, "docs/wire.md lost a packet example");
    for (bytes, fields) in examples {
        let mut parts = fields.split(|f| *f == "|");
        let header = header(parts.next().unwrap());
        let frames: Vec<_> = parts.map(frame_fields).collect();
        let (decoded, header_len) = PacketHeader::decode(&bytes).unwrap();
        assert_eq!(decoded, header, "{bytes:02X?}");
        let parsed: Vec<_> = Frames::new(&bytes[header_len..])
            .map(|f| {
                let f = f.unwrap();
                (f.channel, f.kind, f.payload.to_vec())
            })
            .collect();
        assert_eq!(parsed, frames, "{bytes:02X?}");
        let mut encoded = vec![0u8; bytes.len()];
        let mut at = header.encode(&mut encoded).unwrap();
        for (channel, kind, payload) in &frames {
            let frame = FrameRepr {
                channel: *channel,
                kind: *kind,
                payload,
            };
            at += frame.emit(&mut encoded[at..]).unwrap();
        }
        assert_eq!(&encoded[..at], &bytes[..], "encoding {fields:?}");
    }
}

#[test]
fn the_first_documented_data_packet_is_what_a_connector_sends_first_with_its_connection_tag() {
    let config = ConnectionConfig::default();
    // The cookie-nonce example's acceptor: its first connection's id is documented.
    let secret: [u8; 32] = core::array::from_fn(|i| 0x60 + i as u8);
    let mut acceptor = Acceptor::new(config.clone(), secret).unwrap();
    let mut client = Connection::connect(config, Duration::ZERO).unwrap();
    client.send(1, b"hello").unwrap();
    let (mut buf, mut reply) = ([0u8; 1200], [0u8; 64]);
    let now = Duration::ZERO;
    let mut server = None;
    while server.is_none() {
        let len = client.poll_transmit(now, &mut buf).unwrap().unwrap();
        match acceptor.receive(now, b"connector", &buf[..len], &mut reply) {
            Ok(Accept::Reply { len }) => client.receive(now, &reply[..len]).unwrap(),
            Ok(Accept::Connection(connection)) => server = Some(connection),
            other => panic!("{other:?}"),
        }
    }
    let accepted = server
        .unwrap()
        .poll_transmit(now, &mut buf)
        .unwrap()
        .unwrap();
    client.receive(now, &buf[..accepted]).unwrap();
    let len = client.poll_transmit(now, &mut buf).unwrap().unwrap();
    let (documented, _) = &block("packet-example")[0];
    let tagged = block("tagged-packet-example");
    let [(tagged, fields)] = &tagged[..] else {
        panic!("docs/wire.md lost the tagged packet example");
    };
    let id = u64::from_str_radix(fields[0].strip_prefix("connection_id=").unwrap(), 16).unwrap();
    assert_eq!(client.connection_id(), Some(id));
    assert_eq!(&tagged[..documented.len()], &documented[..]);
    assert_eq!(&tagged[documented.len()..], &(id as u32).to_be_bytes());
    assert_eq!(&buf[..len], &tagged[..]);
}

#[test]
fn every_documented_control_packet_parses_and_emits_byte_for_byte() {
    let examples = block("control-example");
    assert_eq!(examples.len(), 6, "docs/wire.md lost a control example");
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
            "channel-request" => ControlPacket::ChannelRequest {
                protocol_id: hex_u64("protocol_id"),
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

/// The key and IV of the protected examples in `docs/wire.md`: `00 01 .. 1F` and `A0 A1 .. AB`.
fn spec_key() -> ackwire_core::protection::Aes256GcmKey {
    ackwire_core::protection::Aes256GcmKey::new(
        core::array::from_fn(|i| i as u8),
        core::array::from_fn(|i| 0xA0 + i as u8),
    )
}

#[test]
fn protected_examples_seal_and_open_byte_for_byte_and_no_bit_of_them_can_change() {
    use ackwire_core::protection::{PacketKey, TAG_LEN};
    let examples = block("protected-example");
    assert_eq!(examples.len(), 3);
    for (sealed, fields) in examples {
        let field = |name: &str| {
            fields
                .iter()
                .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
                .unwrap_or_else(|| panic!("{name} missing"))
        };
        let number: u64 = field("packet_number").parse().unwrap();
        let header_len: usize = field("header_len").parse().unwrap();
        let plaintext = unhex(field("plaintext"));
        assert_eq!(sealed.len(), header_len + plaintext.len() + TAG_LEN);
        // The header is a real one, sent as it is.
        let (header, len) = PacketHeader::decode(&sealed).unwrap();
        assert_eq!(len, header_len);
        assert_eq!(header.sequence, number as u16);

        let mut key = spec_key();
        let mut payload = plaintext.clone();
        let mut tag = [0u8; TAG_LEN];
        key.seal(number, &sealed[..header_len], &mut payload, &mut tag);
        assert_eq!([&sealed[..header_len], &payload, &tag].concat(), sealed);

        let (head, rest) = sealed.split_at(header_len);
        let (body, tag) = rest.split_at(rest.len() - TAG_LEN);
        let tag: [u8; TAG_LEN] = tag.try_into().unwrap();
        let mut opened = body.to_vec();
        key.open(number, head, &mut opened, &tag).unwrap();
        assert_eq!(opened, plaintext);
        // Under a neighbouring packet number, or with any bit changed, nothing opens.
        for other in [number + 1, number.wrapping_sub(1), number + 65536] {
            assert!(key.open(other, head, &mut body.to_vec(), &tag).is_err());
        }
        for bit in 0..8 * sealed.len() {
            let mut forged = sealed.clone();
            forged[bit / 8] ^= 1 << (bit % 8);
            let (head, rest) = forged.split_at(header_len);
            let (body, tag) = rest.split_at(rest.len() - TAG_LEN);
            let tag: [u8; TAG_LEN] = tag.try_into().unwrap();
            assert!(
                key.open(number, head, &mut body.to_vec(), &tag).is_err(),
                "bit {bit}"
            );
        }
    }
}

#[test]
fn packet_number_examples_rebuild_as_documented() {
    let mut checked = 0;
    for line in fenced("packet-number-example") {
        let (left, number) = line.split_once("=>").unwrap();
        let [largest, sequence] = left.split_whitespace().collect::<Vec<_>>()[..] else {
            panic!("{line}")
        };
        let largest = (largest != "-").then(|| largest.parse::<u64>().unwrap());
        let rebuilt = ackwire_core::protection::packet_number(largest, sequence.parse().unwrap());
        assert_eq!(rebuilt, number.trim().parse::<u64>().unwrap(), "{line}");
        checked += 1;
    }
    assert_eq!(checked, 6);
}

#[test]
fn a_protected_connector_sends_the_documented_first_packet_sealed() {
    use ackwire_core::protection::PacketKeys;
    let key = (
        core::array::from_fn(|i| i as u8),
        core::array::from_fn(|i| 0xA0 + i as u8),
    );
    let config = ConnectionConfig::default();
    let mut acceptor = Acceptor::new(config.clone(), [1; 32]).unwrap();
    let mut client = Connection::connect(config, Duration::ZERO).unwrap();
    client
        .protect(PacketKeys::aes_256_gcm(key, ([0; 32], [0; 12])))
        .unwrap();
    client.send(1, b"hello").unwrap();
    let (mut buf, mut reply) = ([0u8; 1200], [0u8; 64]);
    let now = Duration::ZERO;
    for _ in 0..2 {
        let len = client.poll_transmit(now, &mut buf).unwrap().unwrap();
        match acceptor
            .receive(now, b"a", &buf[..len], &mut reply)
            .unwrap()
        {
            Accept::Reply { len } => client.receive(now, &reply[..len]).unwrap(),
            Accept::Connection(server) => {
                let mut server = *server;
                let len = server.poll_transmit(now, &mut buf).unwrap().unwrap();
                client.receive(now, &buf[..len]).unwrap();
            }
            other => panic!("{other:?}"),
        }
    }
    let len = client.poll_transmit(now, &mut buf).unwrap().unwrap();
    assert_eq!(buf[..len], block("protected-example")[0].0[..]);
}

/// The `name: hex` lines of the `key-exchange-example` block of `docs/wire.md`.
fn key_exchange_example() -> Vec<(String, Vec<u8>)> {
    fenced("key-exchange-example")
        .map(|line| {
            let (name, hex) = line.split_once(':').expect("`name: hex`");
            (name.trim().to_owned(), unhex(&hex.replace(' ', "")))
        })
        .collect()
}

fn spaced(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_documented_key_exchange_runs_byte_for_byte_and_its_keys_seal_the_first_packets() {
    use ackwire_core::protection::{Aes256GcmKey, PacketKey, TAG_LEN};
    use ackwire_core::{NoiseInitiator, NoiseResponder, StaticKey};
    let doc = key_exchange_example();
    let value = |name: &str| -> Vec<u8> {
        doc.iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} missing from the key-exchange-example block"))
            .1
            .clone()
    };
    // The inputs: fixed keys, the acceptor's secret, its clock and the connector's address.
    let acceptor_static: [u8; 32] = value("acceptor static private key").try_into().unwrap();
    let connector_ephemeral: [u8; 32] =
        value("connector ephemeral private key").try_into().unwrap();
    let acceptor_ephemeral: [u8; 32] = value("acceptor ephemeral private key").try_into().unwrap();
    let secret: [u8; 32] = value("acceptor cookie secret").try_into().unwrap();
    let server = StaticKey::from_private(acceptor_static);
    let config = ConnectionConfig::default();
    let mut acceptor = Acceptor::new(config.clone(), secret)
        .unwrap()
        .with_responder(
            NoiseResponder::nk(server.clone()).with_fixed_ephemeral_for_tests(acceptor_ephemeral),
        )
        .unwrap();
    let mut client = Connection::connect(config, Duration::ZERO).unwrap();
    client
        .secure(
            NoiseInitiator::nk(Some(server.public()))
                .with_fixed_ephemeral_for_tests(connector_ephemeral),
        )
        .unwrap();
    client.send(1, b"hello").unwrap();
    let now = Duration::from_millis(1000);
    let (mut buf, mut reply) = ([0u8; 1200], [0u8; 128]);
    let mut wire: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut server_connection = None;
    for name in ["secure request", "secure response"] {
        let len = client.poll_transmit(now, &mut buf).unwrap().unwrap();
        wire.push((name, buf[..len].to_vec()));
        match acceptor
            .receive(now, b"a", &buf[..len], &mut reply)
            .unwrap()
        {
            Accept::Reply { len } => {
                wire.push(("secure challenge", reply[..len].to_vec()));
                client.receive(now, &reply[..len]).unwrap();
            }
            Accept::Connection(server) => {
                let mut server = *server;
                let len = server.poll_transmit(now, &mut buf).unwrap().unwrap();
                wire.push(("secure accepted", buf[..len].to_vec()));
                client.receive(now, &buf[..len]).unwrap();
                server.send(1, b"world").unwrap();
                let len = server.poll_transmit(now, &mut buf).unwrap().unwrap();
                wire.push(("acceptor's first data packet", buf[..len].to_vec()));
                server_connection = Some(server);
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(server_connection.is_some() && client.is_protected());
    let len = client.poll_transmit(now, &mut buf).unwrap().unwrap();
    wire.push(("connector's first data packet", buf[..len].to_vec()));
    let mut computed = vec![("acceptor static public key", server.public().to_vec())];
    computed.extend(wire.iter().map(|(n, b)| (*n, b.clone())));
    let listing: String = computed
        .iter()
        .map(|(n, b)| format!("{n}: {}\n", spaced(b)))
        .collect();
    for (name, bytes) in &computed {
        let documented = doc.iter().find(|(n, _)| n == name).map(|(_, b)| b);
        assert_eq!(
            documented,
            Some(bytes),
            "{name} differs from docs/wire.md; the code computes:\n{listing}"
        );
    }
    // The documented packet keys are the ones the exchange derived: under them, the first
    // data packets seal to exactly what each side sent.
    let first_packets = [
        (
            "connector to acceptor",
            "connector's first data packet",
            0x81,
        ),
        (
            "acceptor to connector",
            "acceptor's first data packet",
            0x81,
        ),
    ];
    for (direction, packet_name, _) in first_packets {
        let key: [u8; 32] = value(&format!("{direction} key")).try_into().unwrap();
        let iv: [u8; 12] = value(&format!("{direction} iv")).try_into().unwrap();
        let packet = value(packet_name);
        let (header, header_len) = PacketHeader::decode(&packet).unwrap();
        assert_eq!(header.sequence, 0);
        let (head, rest) = packet.split_at(header_len);
        let (body, tag) = rest.split_at(rest.len() - TAG_LEN);
        let mut opened = body.to_vec();
        Aes256GcmKey::new(key, iv)
            .open(0, head, &mut opened, &tag.try_into().unwrap())
            .unwrap_or_else(|_| panic!("the documented {direction} key opens the {packet_name}"));
        let message: &[u8] = if packet_name.starts_with("connector") {
            b"hello"
        } else {
            b"world"
        };
        assert!(opened.windows(5).any(|w| w == message), "{direction}");
    }
}

#[test]
fn cookie_nonces_are_the_documented_hmac_of_the_acceptors_challenge_count() {
    use hmac::{Hmac, KeyInit, Mac};
    let doc = key_exchange_example();
    let value = |name: &str| doc.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let secret: [u8; 32] = value("acceptor cookie secret").try_into().unwrap();
    // `HMAC-SHA256(secret, "ackwire nonce" ‖ counter)`, counter as 8 bytes big-endian.
    let nonce = |counter: u64| {
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&secret).unwrap();
        mac.update(b"ackwire nonce");
        mac.update(&counter.to_be_bytes());
        mac.finalize().into_bytes()[..8].to_vec()
    };
    // The documented challenge is the acceptor's first: counter 0. Its cookie follows the
    // type byte: timestamp (8), then the nonce (8).
    assert_eq!(value("secure challenge")[9..17], nonce(0)[..]);
    // The documented nonces by counter, from 0 on: each the HMAC of its count.
    let documented: Vec<(u64, Vec<u8>)> = fenced("cookie-nonce-example")
        .map(|line| {
            let (counter, hex) = line.split_once("=>").expect("`counter => nonce`");
            (
                counter.trim().parse().unwrap(),
                unhex(&hex.replace(' ', "")),
            )
        })
        .collect();
    assert_eq!(
        documented.iter().map(|(c, _)| *c).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    for (counter, bytes) in &documented {
        assert_eq!(bytes[..], nonce(*counter)[..], "counter {counter}");
    }
    // Each challenge after the first takes the next count: an acceptor's challenges carry
    // the documented nonces, in order.
    let mut acceptor = Acceptor::new(ConnectionConfig::default(), secret).unwrap();
    let mut reply = [0u8; 128];
    for (counter, documented) in documented {
        let mut client = Connection::connect(ConnectionConfig::default(), Duration::ZERO).unwrap();
        let mut buf = [0u8; 1200];
        let len = client
            .poll_transmit(Duration::ZERO, &mut buf)
            .unwrap()
            .unwrap();
        let Accept::Reply { len } = acceptor
            .receive(Duration::ZERO, b"a", &buf[..len], &mut reply)
            .unwrap()
        else {
            panic!("a challenge")
        };
        assert_eq!(reply[9..17], documented[..], "challenge {counter}");
        assert_eq!(len, 1 + 32, "a challenge: its type and the cookie");
    }
}
