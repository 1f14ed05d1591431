//! The native tests of `cargo xtask test`: every test executable `cargo test --workspace`
//! builds, run several at a time, then the doctests.
//!
//! `cargo test` runs its executables one after another, and most of this suite's time is
//! spent waiting (idle timeouts, grace periods, reconnects over real sockets): 163 s of wall
//! time for 51 s of CPU (2026-11-30, `cargo xtask test`'s profile). Run side by side, the
//! waits overlap. cargo-nextest does this and more, but it is a ~3-minute compile on every
//! fresh machine, more than the whole suite's wait; this runs the executables cargo itself
//! lists, as cargo would (each in its package's directory, with its manifest directory in the
//! environment), and prints each one's output in one piece when it ends.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Instant,
};

use crate::process::{Result, describe};

/// Executables running at once: enough for the waits to overlap, few enough that the tests
/// with timing bounds of their own (RTTs, link times) keep a core.
const AT_ONCE: usize = 3;

/// One test executable, as `cargo test --no-run --message-format=json` names it.
#[derive(Debug, PartialEq)]
pub(crate) struct TestBinary {
    /// `package tests/name.rs` or `package (unit tests)`: what cargo's `Running` line says.
    pub(crate) label: String,
    pub(crate) executable: PathBuf,
    /// The package's directory: cargo runs each test there.
    pub(crate) package_dir: PathBuf,
}

/// The test executables in cargo's JSON messages (`compiler-artifact` lines of a test
/// profile with an executable), in the order cargo reported them.
pub(crate) fn from_messages(json_lines: &str) -> Result<Vec<TestBinary>> {
    let mut found = Vec::new();
    for line in json_lines.lines().filter(|l| l.starts_with('{')) {
        let message: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("cargo's message {line}: {e}"))?;
        if message["reason"] != "compiler-artifact" || message["profile"]["test"] != true {
            continue;
        }
        let Some(executable) = message["executable"].as_str() else {
            continue;
        };
        let manifest = message["manifest_path"]
            .as_str()
            .ok_or_else(|| format!("no manifest_path in {line}"))?;
        let package_dir = PathBuf::from(manifest)
            .parent()
            .map(PathBuf::from)
            .ok_or_else(|| format!("{manifest} has no directory"))?;
        let package = message["package_id"]
            .as_str()
            .and_then(package_name)
            .unwrap_or("?");
        let target = &message["target"];
        let source = target["src_path"].as_str().unwrap_or("");
        let relative = source
            .strip_prefix(&format!("{}/", package_dir.display()))
            .unwrap_or(source);
        found.push(TestBinary {
            label: format!("{package} {relative}"),
            executable: PathBuf::from(executable),
            package_dir,
        });
    }
    Ok(found)
}

/// A package id's name: `path+file:///dir/core#ackwire-core@0.1.0` (or `…/core#0.1.0`,
/// when the name is the directory's) gives `ackwire-core` (`core`).
fn package_name(id: &str) -> Option<&str> {
    let (path, rest) = id.split_once('#')?;
    match rest.split_once('@') {
        Some((name, _)) => Some(name),
        None => path.rsplit('/').next(),
    }
}

struct Running {
    binary: TestBinary,
    log: PathBuf,
    started: Instant,
}

/// Runs `binaries`, [`AT_ONCE`] at a time, each with its output to a file in `logs` and
/// printed in one piece when it ends; every one runs even after a failure, which is then
/// named in the error.
pub(crate) fn run_all(binaries: Vec<TestBinary>, logs: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    // Each child is waited for by a thread of its own, which says when it ended.
    let (ended_tx, ended_rx) = std::sync::mpsc::channel();
    let mut waiting = binaries.into_iter().enumerate();
    let mut running: std::collections::HashMap<usize, Running> = Default::default();
    let mut failed = Vec::new();
    loop {
        while running.len() < AT_ONCE {
            let Some((i, binary)) = waiting.next() else {
                break;
            };
            let log = logs.join(format!("{i}.log"));
            let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
            let err = out.try_clone().map_err(|e| e.to_string())?;
            let mut cmd = Command::new(&binary.executable);
            cmd.current_dir(&binary.package_dir)
                .env("CARGO_MANIFEST_DIR", &binary.package_dir)
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err);
            let mut child: Child = cmd
                .spawn()
                .map_err(|e| format!("cannot start `{}`: {e}", describe(&cmd)))?;
            let tx = ended_tx.clone();
            std::thread::spawn(move || {
                let _ = tx.send((i, child.wait().map_err(|e| e.to_string())));
            });
            running.insert(
                i,
                Running {
                    binary,
                    log,
                    started: Instant::now(),
                },
            );
        }
        if running.is_empty() {
            break;
        }
        let (i, status) = ended_rx
            .recv()
            .map_err(|_| "a test executable's waiting thread is gone".to_owned())?;
        let r = running.remove(&i).expect("a running executable ended");
        let said = match &status {
            Ok(status) => status.to_string(),
            Err(e) => e.clone(),
        };
        println!(
            "     Ran {} ({}): {:.1}s, {said}",
            r.binary.label,
            r.binary.executable.display(),
            r.started.elapsed().as_secs_f64()
        );
        print!("{}", std::fs::read_to_string(&r.log).unwrap_or_default());
        if !status.is_ok_and(|s| s.success()) {
            failed.push((i, r.binary.label));
        }
    }
    failed.sort();
    if failed.is_empty() {
        Ok(())
    } else {
        let names: Vec<String> = failed.into_iter().map(|(_, label)| label).collect();
        Err(format!("failed: {}", names.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_executables_are_read_from_cargos_messages() {
        let messages = r#"   Compiling foo
{"reason":"compiler-artifact","package_id":"path+file:///w/core#ackwire-core@0.1.0","manifest_path":"/w/core/Cargo.toml","target":{"kind":["test"],"name":"acks","src_path":"/w/core/tests/acks.rs"},"profile":{"test":true},"executable":"/w/target/debug/deps/acks-1"}
{"reason":"compiler-artifact","package_id":"path+file:///w/core#ackwire-core@0.1.0","manifest_path":"/w/core/Cargo.toml","target":{"kind":["lib"],"name":"ackwire_core","src_path":"/w/core/src/lib.rs"},"profile":{"test":false},"executable":null}
{"reason":"compiler-artifact","package_id":"path+file:///w/xtask#0.1.0","manifest_path":"/w/xtask/Cargo.toml","target":{"kind":["bin"],"name":"xtask","src_path":"/w/xtask/src/main.rs"},"profile":{"test":true},"executable":"/w/target/debug/deps/xtask-2"}
{"reason":"compiler-artifact","package_id":"path+file:///w/xtask#0.1.0","manifest_path":"/w/xtask/Cargo.toml","target":{"kind":["bin"],"name":"xtask","src_path":"/w/xtask/src/main.rs"},"profile":{"test":false},"executable":"/w/target/debug/xtask"}
{"reason":"build-finished","success":true}"#;
        assert_eq!(
            from_messages(messages).unwrap(),
            [
                TestBinary {
                    label: "ackwire-core tests/acks.rs".into(),
                    executable: "/w/target/debug/deps/acks-1".into(),
                    package_dir: "/w/core".into(),
                },
                TestBinary {
                    label: "xtask src/main.rs".into(),
                    executable: "/w/target/debug/deps/xtask-2".into(),
                    package_dir: "/w/xtask".into(),
                },
            ]
        );
    }

    #[test]
    fn a_failing_executable_is_named_and_the_others_still_run() {
        let dir = std::env::temp_dir().join(format!("xtask-run-all-{}", std::process::id()));
        let binary = |label: &str, exe: &str| TestBinary {
            label: label.into(),
            executable: exe.into(),
            package_dir: std::env::temp_dir(),
        };
        let outcome = run_all(
            vec![
                binary("a false one", "/bin/false"),
                binary("t1", "/bin/true"),
                binary("t2", "/bin/true"),
                binary("t3", "/bin/true"),
                binary("t4", "/bin/true"),
                binary("another false one", "/bin/false"),
            ],
            &dir,
        );
        assert_eq!(
            outcome,
            Err("failed: a false one, another false one".into())
        );
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 6, "each one ran");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
