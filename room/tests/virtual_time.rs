//! The room member in virtual time, on the world of `world/mod.rs`: its links and their
//! recovery (`member.rs`), delivery exactly once (`messages.rs`), host rooms
//! (`host_rooms.rs`), clocks (`clock.rs`) and WebTransport links (`webtransport.rs`). One test binary for the five: the world is compiled optimised (the
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
#[path = "webtransport.rs"]
mod webtransport;
