//! `ackwire-peer`: the native driver. The UDP/WebRTC driver lands with its own issue; until
//! then the binary only reports which core it was built against.

fn main() {
    println!("ackwire-peer (core {})", ackwire_core::VERSION);
}
