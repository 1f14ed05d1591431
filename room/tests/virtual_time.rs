//! The room member in virtual time, on the world of `world/mod.rs`: its links and their
//! recovery (`member.rs`), delivery exactly once (`messages.rs`), host rooms
//! (`host_rooms.rs`), clocks (`clock.rs`), WebTransport links (`webtransport.rs`) and WebSocket links
//! (`websocket.rs`). One test binary for the six: the world is compiled optimised (the
//! explorer plays thousands of schedules on it), once here rather than once per file, which
//! took ~19 s of a core each.

mod world;

#[path = "clock.rs"]
mod clock;

#[path = "host_rooms.rs"]
mod host_rooms;
#[path = "member.rs"]
mod member;
#[path = "messages.rs"]
mod messages;
#[path = "websocket.rs"]
mod websocket;
#[path = "webtransport.rs"]
mod webtransport;
