//! The signal server's tests, one module per subject, in one binary: the shared harness
//! compiles once, and tokio, axum and the server link once, not once per subject. Run one
//! subject with `cargo test -p ackwire-signal --test server tickets::`.

mod common;

mod abuse;
mod apps;
mod broker;
mod deployment;
mod host_rooms;
mod pages;
mod scale_out;
mod signalling;
mod tickets;
mod tls;
mod turn;
