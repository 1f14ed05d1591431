//! A self-signed certificate and its key for trying `--tls-cert`/`--tls-key` locally (the
//! e2e suite's `wss` test uses it too). Browsers warn about it: accept the warning, or start
//! Chromium with `--ignore-certificate-errors`. Public servers want a certificate from a CA.
//!
//! ```text
//! cargo run -p ackwire-signal --example self_signed_cert -- DIR [NAME..]
//! ```
//!
//! Writes `DIR/cert.pem` and `DIR/key.pem` (created if needed; the key readable by the owner
//! only) for the NAMEs, host names or IP addresses; default `localhost 127.0.0.1 ::1`.

use std::path::PathBuf;

use anyhow::{Context, bail};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        bail!("usage: self_signed_cert DIR [NAME..]");
    };
    let mut names: Vec<String> = args.collect();
    if names.is_empty() {
        names = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
    }
    let made =
        rcgen::generate_simple_self_signed(names.clone()).context("making the certificate")?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, made.cert.pem())
        .with_context(|| format!("writing {}", cert.display()))?;
    write_private(&key, made.signing_key.serialize_pem())
        .with_context(|| format!("writing {}", key.display()))?;
    println!(
        "{} and {} for {}",
        cert.display(),
        key.display(),
        names.join(", ")
    );
    Ok(())
}

#[cfg(unix)]
fn write_private(path: &std::path::Path, text: String) -> std::io::Result<()> {
    use std::{io::Write, os::unix::fs::OpenOptionsExt};
    let _ = std::fs::remove_file(path);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?
        .write_all(text.as_bytes())
}

#[cfg(not(unix))]
fn write_private(path: &std::path::Path, text: String) -> std::io::Result<()> {
    std::fs::write(path, text)
}
