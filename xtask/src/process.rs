//! Running commands: echo them, time out where the network may hang, wrap in a network
//! namespace where browsers run.

use std::{
    io,
    process::{Command, ExitStatus},
    time::{Duration, Instant},
};

pub(crate) type Result<T> = std::result::Result<T, String>;

/// Runs `cmd`, echoing it first; an unsuccessful exit becomes an error naming the command.
pub(crate) fn run(cmd: &mut Command) -> Result<()> {
    let status = status(cmd)?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", describe(cmd)))
    }
}

pub(crate) fn status(cmd: &mut Command) -> Result<ExitStatus> {
    eprintln!("  $ {}", describe(cmd));
    cmd.status()
        .map_err(|e| format!("cannot start `{}`: {e}", describe(cmd)))
}

/// Runs `cmd`, echoing it first, with its stdout passed through line by line and also
/// returned (stderr passes through). An unsuccessful exit is an error naming the command,
/// with what it printed kept in `printed`.
pub(crate) fn tee(cmd: &mut Command, printed: &mut String) -> Result<()> {
    use std::io::{BufRead, BufReader};
    eprintln!("  $ {}", describe(cmd));
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", describe(cmd)))?;
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line.map_err(|e| format!("reading `{}`: {e}", describe(cmd)))?;
            println!("{line}");
            printed.push_str(&line);
            printed.push('\n');
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for `{}`: {e}", describe(cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", describe(cmd)))
    }
}

/// Runs `cmd` and returns its stdout (stderr passes through); fails on a non-zero exit.
pub(crate) fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot start `{}`: {e}", describe(cmd)))?;
    if !out.status.success() {
        return Err(format!("`{}` failed ({})", describe(cmd), out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `cmd`, killing it after `limit`. Returns `Ok(false)` on failure or timeout, so the
/// caller can take another route.
pub(crate) fn run_with_timeout(cmd: &mut Command, limit: Duration) -> io::Result<bool> {
    eprintln!("  $ {}  (timeout {}s)", describe(cmd), limit.as_secs());
    let mut child = cmd.spawn()?;
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status.success());
        }
        if start.elapsed() > limit {
            eprintln!("  timed out after {}s; killing it", limit.as_secs());
            child.kill()?;
            child.wait()?;
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Wraps a command so it runs in a fresh network namespace where only loopback is up, so
/// browsers (and WebRTC's ICE) can never reach or pick another interface.
pub(crate) fn in_loopback_namespace(program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--net",
        "--",
        "sh",
        "-c",
        r#"ip link set lo up && exec "$0" "$@""#,
        program,
    ])
    .args(args);
    cmd
}

pub(crate) fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null 2>&1")])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

pub(crate) fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}
