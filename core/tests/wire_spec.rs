//! Holds the codec to the worked examples in `docs/wire.md`, byte for byte.

use ackwire_core::wire::PacketHeader;

const SPEC: &str = include_str!("../../docs/wire.md");

fn examples() -> Vec<(Vec<u8>, PacketHeader)> {
    let block = SPEC
        .split("```wire-example\n")
        .nth(1)
        .expect("docs/wire.md has a wire-example block")
        .split("```")
        .next()
        .unwrap();
    block
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let (hex, fields) = line.split_once("=>").expect("`bytes => fields`");
            let bytes = hex
                .split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).unwrap())
                .collect();
            let mut fields = fields.split_whitespace();
            let sequence = fields.next().unwrap().parse().unwrap();
            let ack = fields.next().unwrap().parse().unwrap();
            let bits = fields.next().unwrap().trim_start_matches("0x");
            let ack_bits = u32::from_str_radix(bits, 16).unwrap();
            (
                bytes,
                PacketHeader {
                    sequence,
                    ack,
                    ack_bits,
                },
            )
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
