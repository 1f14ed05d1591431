//! `cargo xtask bench`: every benchmark, each a ratio against a baseline measured in the
//! same run where the goal is relative (the core against laminar, the listener at a few
//! connections against many, the native peer against a raw UDP echo, the room API against
//! bare core connections), and the figures users meet (the signal server under load, joins,
//! the cold start). A full green run writes what every stage printed to
//! `docs/measurements.md`, with the run's date and machine: the figures there all come from
//! one run.

use std::{fmt::Write as _, fs, process::Command, time::Instant};

use crate::{
    bundle, paths,
    process::{Result, describe, in_loopback_namespace, tee},
    setup::{self, Tools},
    suite::{build_bin, build_signal_server, e2e_command, e2e_files},
};

use paths::cargo;

/// How xtask runs a stage; what it prints goes into the `String`.
type Run = Box<dyn FnOnce(&mut String) -> Result<()>>;

/// A bench stage: its name (what `cargo xtask bench NAME` matches), the command a reader
/// runs to measure it alone, and how xtask runs it (what it prints goes into `printed`).
struct Bench {
    name: &'static str,
    command: &'static str,
    run: Run,
}

/// What one stage did.
struct Outcome {
    name: &'static str,
    command: &'static str,
    printed: String,
    result: Result<()>,
    seconds: f64,
}

fn cargo_bench(package: &'static str, bench: &'static str) -> Run {
    Box::new(move |printed| {
        tee(
            cargo().args(["bench", "-p", package, "--bench", bench]),
            printed,
        )
    })
}

fn benches() -> Vec<Bench> {
    vec![
        Bench {
            name: "core: packets and messages vs laminar",
            command: "cargo bench -p ackwire-core --bench packet_path",
            run: cargo_bench("ackwire-core", "packet_path"),
        },
        Bench {
            name: "core: listener cost per echo at 64 / 2,000 / 10,000 connections",
            command: "cargo bench -p ackwire-core --bench listener_scale",
            run: cargo_bench("ackwire-core", "listener_scale"),
        },
        Bench {
            name: "core: heap per connection at 2,000 / 10,000 (idle, chat, after)",
            command: "cargo bench -p ackwire-core --bench connection_memory",
            run: cargo_bench("ackwire-core", "connection_memory"),
        },
        Bench {
            name: "bulk: a 4 MiB reliable transfer beside a game's state, ackwire vs renet, loopback UDP and emulated 50 ms at 1 % and 5 % loss",
            command: "cargo bench -p ackwire-core --bench bulk",
            run: cargo_bench("ackwire-core", "bulk"),
        },
        Bench {
            name: "native peer: UDP vs raw echo (unbatched, batched), encrypted vs plaintext, connections/core",
            command: "cargo bench -p ackwire-peer --bench udp",
            run: cargo_bench("ackwire-peer", "udp"),
        },
        Bench {
            name: "room API: messages/s and CPU per message, Room vs core connections over UDP",
            command: "cargo bench -p ackwire-peer --bench room",
            run: cargo_bench("ackwire-peer", "room"),
        },
        Bench {
            name: "clock: the room's clock read by a peer over loopback UDP, clean and at 10 % loss with 20 ms jitter, against the link's jitter",
            command: "cargo bench -p ackwire-peer --bench clock",
            run: cargo_bench("ackwire-peer", "clock"),
        },
        Bench {
            name: "sim: the room's schedule explorer, 1,000,000 seeds (exactly once under random schedules; ~70 min)",
            command: "cargo xtask sim --seeds 1000000",
            run: Box::new(|printed| {
                tee(
                    cargo().args(["xtask", "sim", "--seeds", "1000000"]),
                    printed,
                )
            }),
        },
        Bench {
            name: "host-stack: a WebRTC connection's cost to a host, webrtc crate vs str0m",
            command: "cargo bench -p ackwire-peer --bench host_stack",
            run: cargo_bench("ackwire-peer", "host_stack"),
        },
        Bench {
            name: "native peer: listen RSS at 10,000 connections, encrypted and plaintext",
            command: "cargo bench -p ackwire-peer --bench listen_memory",
            run: cargo_bench("ackwire-peer", "listen_memory"),
        },
        Bench {
            name: "host room: 256 players (UDP, WebRTC, WebTransport, WebSocket) on one host process: CPU and RSS per player of each kind, joins, loss",
            command: "cargo bench -p ackwire-peer --bench host",
            run: cargo_bench("ackwire-peer", "host"),
        },
        Bench {
            name: "signal server: 10k idle clients, 1k relays/s, join latency (and with join tickets, in the same run)",
            command: "cargo run --release -p ackwire-signal --example load -- --clients 10000 --relays-per-sec 1000 --duration-secs 20",
            run: Box::new(|printed| {
                signal_example(
                    "load",
                    &[
                        "--clients",
                        "10000",
                        "--relays-per-sec",
                        "1000",
                        "--duration-secs",
                        "20",
                    ],
                    printed,
                )
            }),
        },
        Bench {
            name: "joins: page open -> first ack (the demo's page) and first state update (the game's page), release server, native peer and game host",
            command: "cargo xtask bench joins",
            run: Box::new(|printed| setup::run().and_then(|tools| joins(&tools, printed))),
        },
        Bench {
            name: "join-rtt (cold-start): the example game's page joining its native host, the demo's page joining a native peer and a browser, at 0, 40 and 100 ms RTT, round trips",
            command: "cargo xtask bench join-rtt",
            run: Box::new(|printed| setup::run().and_then(|tools| cold_start(&tools, printed))),
        },
        Bench {
            name: "soak: 10 minutes of a room of 3 Chromium pages and 2 natives chatting through loss, a server SIGKILL and a pulled cable, every line exactly once",
            command: "cargo xtask bench soak",
            run: Box::new(|printed| setup::run().and_then(|tools| soak(&tools, printed))),
        },
        Bench {
            name: "signal servers sharing rooms: 3 x 5,000 clients, relay same vs across, failover",
            command: "cargo run --release -p ackwire-signal --example scale_load -- --instances 3 --clients-per-instance 5000",
            run: Box::new(|printed| {
                signal_example(
                    "scale_load",
                    &["--instances", "3", "--clients-per-instance", "5000"],
                    printed,
                )
            }),
        },
    ]
}

/// A stage's first word (`host` in "host room: ..."), its short name.
fn first_word(name: &str) -> &str {
    name.split([' ', ':']).next().unwrap_or(name)
}

/// Whether `filter` picks the stage `name`: the stages whose first word it is, when any has
/// it (`host` is the host-room stage alone, not every stage that mentions a host); else every
/// stage whose name contains it.
fn selects(names: &[&str], name: &str, filter: &str) -> bool {
    if names.iter().any(|n| first_word(n) == filter) {
        first_word(name) == filter
    } else {
        name.contains(filter)
    }
}

/// Runs the stages whose name contains one of `only` (all without), prints a summary, and
/// after a full run writes `docs/measurements.md`, a failed stage marked as such (a partial
/// run writes `target/measurements.md`, so it never replaces a full run's figures).
pub(crate) fn bench(only: &[&str]) -> Result<()> {
    let start = Instant::now();
    let all = benches();
    let total = all.len();
    let names: Vec<&'static str> = all.iter().map(|b| b.name).collect();
    let outcomes: Vec<Outcome> = all
        .into_iter()
        .filter(|b| only.is_empty() || only.iter().any(|o| selects(&names, b.name, o)))
        .map(|b| {
            println!("== {}", b.name);
            let began = Instant::now();
            let mut printed = String::new();
            let result = (b.run)(&mut printed);
            let seconds = began.elapsed().as_secs_f64();
            match &result {
                Ok(()) => println!("== {}: ok ({seconds:.1}s)", b.name),
                Err(e) => println!("== {}: FAILED ({seconds:.1}s): {e}", b.name),
            }
            Outcome {
                name: b.name,
                command: b.command,
                printed,
                result,
                seconds,
            }
        })
        .collect();
    if outcomes.is_empty() {
        return Err(format!("no bench stage matches {}", only.join(" ")));
    }
    let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
    println!();
    for o in &outcomes {
        let mark = if o.result.is_ok() { "ok    " } else { "FAILED" };
        println!("  {mark} {:<45} {:>6.1}s", o.name, o.seconds);
    }
    let seconds = start.elapsed().as_secs_f64();
    let summary = format!(
        "{}/{} stages passed in {seconds:.1}s",
        outcomes.len() - failed,
        outcomes.len()
    );
    println!("xtask bench: {summary}");
    let full = outcomes.len() == total;
    let path = if full {
        paths::root().join("docs").join("measurements.md")
    } else {
        paths::root().join("target").join("measurements.md")
    };
    fs::write(&path, measurements(&outcomes, &summary, full))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!(
        "   {} written{}",
        path.strip_prefix(paths::root()).unwrap_or(&path).display(),
        if full {
            ""
        } else {
            " (docs/measurements.md is written by a full run)"
        }
    );
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} stage(s) failed"))
    }
}

/// The Markdown of a run: when and where, then each stage's command and what it printed
/// (criterion's progress lines left out).
fn measurements(outcomes: &[Outcome], summary: &str, full: bool) -> String {
    let mut md = String::from("# Measurements\n\n");
    md.push_str(
        "Written by `cargo xtask bench` from its own run, nothing edited by hand: every figure \
         below comes from the one run described here, each stage's output as it printed it \
         (criterion's progress lines left out). Ratios are against a baseline measured in the \
         same run; absolute figures depend on the machine and its load. The README's headline \
         table quotes this file. Each stage's command measures it alone.\n\n",
    );
    let _ = writeln!(md, "- run: {}", now_utc());
    let _ = writeln!(md, "- machine: {}", machine());
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.result.is_err())
        .map(|o| o.name)
        .collect();
    let _ = writeln!(md, "- {summary}");
    if !full {
        md.push_str("- a partial run (some stages only): not the project's figures\n");
    }
    if !failed.is_empty() {
        let _ = writeln!(
            md,
            "- **failed**: {}; their figures are missing below, and the README quotes only \
             stages that passed",
            failed.join("; ")
        );
    }
    md.push('\n');
    for o in outcomes {
        let _ = writeln!(md, "## {}\n", o.name);
        let status = match &o.result {
            Ok(()) => format!("ok in {:.0} s", o.seconds),
            Err(e) => format!("FAILED after {:.0} s: {e}", o.seconds),
        };
        let _ = writeln!(md, "`{}` · {status}\n", o.command);
        md.push_str("```text\n");
        for line in o.printed.lines().filter(|l| !is_progress(l)) {
            md.push_str(line.trim_end());
            md.push('\n');
        }
        md.push_str("```\n\n");
    }
    md
}

/// Not results: criterion's progress and setup chatter, and the log lines of the programs a
/// stage runs (a timestamped tracing line, or one a test relays as `[native PID] …`), and
/// the tests node's runner skipped for not being the stage's.
fn is_progress(line: &str) -> bool {
    let log = line
        .strip_prefix('[')
        .and_then(|rest| rest.split_once("] "))
        .map_or(line, |(_, after)| after);
    let timestamped = log.len() > 20
        && log.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && log.as_bytes()[4] == b'-'
        && log.as_bytes()[10] == b'T';
    let level = log.split_whitespace().nth(1).unwrap_or("");
    line.starts_with("Benchmarking ")
        || line.starts_with("Gnuplot not found")
        || line.ends_with("# test name does not match pattern")
        || (timestamped && ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&level))
}

fn now_utc() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".into())
}

/// Cores, memory, kernel and compiler: what the figures depend on.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let kb: u64 = m.lines().next()?.split_whitespace().nth(1)?.parse().ok()?;
            Some(format!("{:.0} GiB", kb as f64 / (1024.0 * 1024.0)))
        })
        .unwrap_or_else(|| "? GiB".into());
    let first_line = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .output()
            .ok()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_owned()
            })
            .unwrap_or_default()
    };
    format!(
        "{cores} cores, {memory}, Linux {}, {}",
        first_line("uname", &["-r"]),
        first_line("rustc", &["--version"]),
    )
}

/// Runs one of the signal server's load examples, in release.
fn signal_example(name: &str, args: &[&str], printed: &mut String) -> Result<()> {
    tee(
        cargo()
            .args([
                "run",
                "--release",
                "-p",
                "ackwire-signal",
                "--example",
                name,
                "--",
            ])
            .args(args),
        printed,
    )
}

/// The join figures users get: the e2e's ten-join runs (the demo's page as a second browser
/// player and joining a native peer, and the example game's page joining its host) against
/// the release server, native peer and game host; each prints its medians.
fn joins(tools: &Tools, printed: &mut String) -> Result<()> {
    bundle::build(tools)?;
    let server = build_signal_server(true)?;
    let peer = build_bin("ackwire-peer", "ackwire-peer", true)?;
    let host = build_bin("pong", "pong-host", true)?;
    let files = e2e_files(&["room.test", "native-peer.test", "pong.test"])?;
    let mut cmd = e2e_command(&files, &["--test-name-pattern=^ten "], &server, &peer);
    cmd.env("ACKWIRE_PONG_HOST_BIN", host)
        .env("ACKWIRE_PONG_WEB_DIR", paths::pong_web_dir());
    tee(&mut cmd, printed).map_err(|e| format!("{e}\n   (command: {})", describe(&cmd)))
}

/// The room soak (web/e2e/soak.bench.mjs): pages and natives chatting for 10 minutes
/// (`ACKWIRE_SOAK_SECS`) through emulated loss and latency, a signal-server SIGKILL and a
/// pulled cable; fails on any line lost or delivered twice.
fn soak(tools: &Tools, printed: &mut String) -> Result<()> {
    bundle::build(tools)?;
    let server = build_signal_server(true)?;
    let peer = build_bin("ackwire-peer", "ackwire-peer", true)?;
    let mut cmd = in_loopback_namespace("node", &["e2e/soak.bench.mjs"]);
    cmd.current_dir(paths::web_dir())
        .env("ACKWIRE_SIGNAL_BIN", server)
        .env("ACKWIRE_PEER_BIN", peer)
        .env("ACKWIRE_WEB_DIR", paths::web_dir())
        .env("CHROMIUM", "/usr/bin/chromium");
    tee(&mut cmd, printed).map_err(|e| format!("{e}\n   (command: {})", describe(&cmd)))
}

/// Cold start over a real path (web/e2e/cold-start.bench.mjs, docs/cold-start.md): a fresh
/// Chromium in one namespace opens the example game's page (examples/pong) served by the
/// release server, with the game's release host in its room, and the demo's room page, with
/// the release native peer or a resident browser in its room, from another namespace, through
/// a userspace delay bridge in a third; medians per step at 0, 20 and 50 ms added each way,
/// and the round trips used.
fn cold_start(tools: &Tools, printed: &mut String) -> Result<()> {
    bundle::build(tools)?;
    let server = build_signal_server(true)?;
    let host = build_bin("pong", "pong-host", true)?;
    let peer = build_bin("ackwire-peer", "ackwire-peer", true)?;
    // The script's namespaces carry this tag, so whatever a crashed or killed run leaves is
    // found and removed below.
    let tag = format!("ackcold{}", std::process::id());
    let mut cmd = in_loopback_namespace("node", &["e2e/cold-start.bench.mjs"]);
    cmd.current_dir(paths::web_dir())
        .env("ACKWIRE_SIGNAL_BIN", server)
        .env("ACKWIRE_PONG_HOST_BIN", host)
        .env("ACKWIRE_PEER_BIN", peer)
        .env("ACKWIRE_PONG_WEB_DIR", paths::pong_web_dir())
        .env("ACKWIRE_WEB_DIR", paths::web_dir())
        .env("ACKWIRE_NETNS_TAG", &tag)
        .env("CHROMIUM", "/usr/bin/chromium");
    let outcome =
        tee(&mut cmd, printed).map_err(|e| format!("{e}\n   (command: {})", describe(&cmd)));
    remove_namespaces(&tag);
    outcome
}

/// Removes the network namespaces named `tag-*` (only this run's), ending the processes this
/// run started in them first.
fn remove_namespaces(tag: &str) {
    let Ok(list) = crate::process::output(Command::new("ip").args(["netns", "list"])) else {
        return;
    };
    let prefix = format!("{tag}-");
    for name in list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix))
    {
        if let Ok(pids) = crate::process::output(Command::new("ip").args(["netns", "pids", name])) {
            for pid in pids.split_whitespace() {
                let _ = Command::new("kill").args(["-KILL", pid]).status();
            }
        }
        eprintln!("   removing namespace {name} left by the bench");
        let _ = Command::new("ip").args(["netns", "del", name]).status();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stages_first_word_picks_it_alone_and_other_words_pick_every_stage_that_has_them() {
        let names: Vec<&'static str> = benches().iter().map(|b| b.name).collect();
        let picked = |filter: &str| -> Vec<&str> {
            names
                .iter()
                .copied()
                .filter(|n| selects(&names, n, filter))
                .collect()
        };
        assert_eq!(picked("host").len(), 1);
        assert!(picked("host")[0].starts_with("host room:"));
        assert!(picked("host-stack")[0].starts_with("host-stack:"));
        assert_eq!(picked("joins").len(), 1);
        assert!(picked("cold-start")[0].starts_with("join-rtt"));
        assert!(picked("laminar")[0].starts_with("core:"));
    }
}
