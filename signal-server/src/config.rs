//! The server's one configuration struct: every flag, its environment variable and default.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use ackwire_signalling::IceServer;
use clap::Parser;

fn parse_ice_servers(s: &str) -> Result<IceServers, String> {
    serde_json::from_str(s)
        .map(IceServers)
        .map_err(|e| format!("expected a JSON array like [{{\"urls\":[\"stun:host:3478\"]}}]: {e}"))
}

/// The ICE server list as one clap value (a JSON array).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IceServers(pub Vec<IceServer>);

fn parse_turn_url(s: &str) -> Result<String, String> {
    if s.starts_with("turn:") || s.starts_with("turns:") {
        Ok(s.to_owned())
    } else {
        Err("expected turn:HOST:PORT[?transport=udp|tcp] or turns:HOST:PORT".into())
    }
}

/// A directory of a game's own, served under a path of its own (`--static PATH=DIR`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticDir {
    /// `/NAME`: one path segment, outside the server's own routes.
    pub path: String,
    /// The directory served there.
    pub dir: PathBuf,
}

/// First path segments the server's routes and `web/`'s directories already take.
const RESERVED_PATHS: &[&str] = &[
    "ws",
    "room",
    "v",
    "new",
    "dashboard",
    "healthz",
    "metrics",
    "pkg",
    "vendor",
];

fn parse_static(s: &str) -> Result<StaticDir, String> {
    let (path, dir) = s
        .split_once('=')
        .ok_or("expected PATH=DIR, e.g. /pong=examples/pong/web")?;
    let name = path.strip_prefix('/').unwrap_or(path).trim_end_matches('/');
    // One segment: the page's relative URLs then resolve under it, and two mounts never nest.
    if !ackwire_signalling::is_valid_name(name) {
        return Err(format!(
            "{path}: the path is one segment of {NAME_RULE} (e.g. /pong)",
            NAME_RULE = ackwire_signalling::NAME_RULE
        ));
    }
    if RESERVED_PATHS.contains(&name) {
        return Err(format!("/{name} is one of the server's own paths"));
    }
    let dir = PathBuf::from(dir);
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    Ok(StaticDir {
        path: format!("/{name}"),
        dir,
    })
}

fn parse_ttl_secs(s: &str) -> Result<Duration, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("must be at least 1 second".into()),
        Ok(secs) => Ok(Duration::from_secs(secs)),
        Err(e) => Err(format!("expected seconds: {e}")),
    }
}

fn parse_duration_ms(s: &str) -> Result<Duration, String> {
    s.parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|e| format!("expected milliseconds: {e}"))
}

/// Server configuration. Every field is a flag (`--kebab-case`) and an `ACKWIRE_*` variable.
#[derive(Debug, Clone, Parser)]
#[command(name = "ackwire-signal", version, about)]
pub struct Config {
    /// Address to listen on. Default `127.0.0.1:8080`.
    #[arg(long, env = "ACKWIRE_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
    /// Directory with the pages (`index.html`, `room.html`, `dashboard.html`), scripts and the
    /// wasm bundle under `pkg/`. Default: none, which serves the copy of `web/` embedded at
    /// build time (release builds; debug builds read that folder at run time: the
    /// repository's `web/`, or the published package's `assets/`).
    /// Scripts, styles and the bundle are also served under `/v/{version}/`, immutable;
    /// changes on disk are picked up at the next page load.
    #[arg(long, env = "ACKWIRE_WEB_DIR")]
    pub web_dir: Option<PathBuf>,
    /// `PATH=DIR`: serve the files of DIR under `/PATH/` (`/PATH/` itself: DIR's
    /// `index.html`), `no-cache`, beside the pages: a game's own pages, which import
    /// `/ackwire.js` from this server. PATH is one segment (`/pong`) outside the server's own
    /// routes; hidden files (`.name`) are never served. Repeat the flag, or comma-separate the
    /// variable, for several games. Default: none.
    #[arg(long = "static", env = "ACKWIRE_STATIC", value_delimiter = ',', value_parser = parse_static)]
    pub statics: Vec<StaticDir>,
    /// STUN/TURN servers handed to peers in the welcome, as a JSON array of
    /// `{"urls":[..],"username":..,"credential":..}`. Default `[]` (host candidates only).
    #[arg(long, env = "ACKWIRE_ICE_SERVERS", default_value = "[]", value_parser = parse_ice_servers)]
    pub ice_servers: IceServers,
    /// A TURN server handed to every joining peer with short-lived credentials
    /// (`turn:HOST:PORT[?transport=udp]`, or `turns:`): repeat the flag, or comma-separate
    /// the variable, for several URLs of one TURN server. Needs `--turn-secret`. Default: none.
    #[arg(long = "turn-url", env = "ACKWIRE_TURN_URL", value_delimiter = ',', requires = "turn_secret", value_parser = parse_turn_url)]
    pub turn_urls: Vec<String>,
    /// The secret shared with the TURN server (coturn: `--use-auth-secret
    /// --static-auth-secret`). Never sent to clients; prefer the environment variable, as
    /// flags show in `ps`. Default: none.
    #[arg(
        long,
        env = "ACKWIRE_TURN_SECRET",
        hide_env_values = true,
        requires = "turn_urls"
    )]
    pub turn_secret: Option<String>,
    /// Lifetime of the TURN credentials, in seconds. A joined peer gets fresh ones at three
    /// quarters of it. Default 3600.
    #[arg(long = "turn-ttl", env = "ACKWIRE_TURN_TTL", default_value = "3600", value_parser = parse_ttl_secs)]
    pub turn_ttl: Duration,
    /// Largest text message handled; bigger ones get a `message_too_large` error frame.
    /// Default 16384 bytes. Messages over four times this close the connection.
    #[arg(long, env = "ACKWIRE_MAX_MESSAGE_BYTES", default_value_t = 16 * 1024)]
    pub max_message_bytes: usize,
    /// Sustained messages per second allowed per connection. Default 20.
    #[arg(long, env = "ACKWIRE_RATE_PER_SEC", default_value_t = 20)]
    pub rate_per_sec: u32,
    /// Burst of messages allowed above the sustained rate. Default 40.
    #[arg(long, env = "ACKWIRE_RATE_BURST", default_value_t = 40)]
    pub rate_burst: u32,
    /// Rate-limited messages in a row after which the connection is closed. Default 20.
    #[arg(long, env = "ACKWIRE_RATE_STRIKES", default_value_t = 20)]
    pub rate_strikes: u32,
    /// Peers allowed in one mesh room (every peer linked to every other). Default 16.
    #[arg(long, env = "ACKWIRE_MAX_PEERS_PER_ROOM", default_value_t = 16)]
    pub max_peers_per_room: usize,
    /// Peers allowed in one host room (a host and its clients: made for hundreds, and a
    /// client's join or leave is news to the host alone). Default 256.
    #[arg(long, env = "ACKWIRE_MAX_PEERS_PER_HOST_ROOM", default_value_t = ackwire_signalling::rules::DEFAULT_MAX_PEERS_PER_HOST_ROOM)]
    pub max_peers_per_host_room: usize,
    /// Rooms allowed at once. Default 10000.
    #[arg(long, env = "ACKWIRE_MAX_ROOMS", default_value_t = 10_000)]
    pub max_rooms: usize,
    /// Frames queued for one client before it counts as not reading and is closed. Default 64;
    /// a host room's host gets 8 more per place of `--max-peers-per-host-room` (2,112).
    #[arg(long, env = "ACKWIRE_OUTBOUND_QUEUE", default_value_t = 64)]
    pub outbound_queue: usize,
    /// Interval between pings, in milliseconds. Default 15000.
    #[arg(long = "ping-interval-ms", env = "ACKWIRE_PING_INTERVAL_MS", default_value = "15000", value_parser = parse_duration_ms)]
    pub ping_interval: Duration,
    /// A connection silent (not even a pong) for this long is closed, in ms. Default 40000.
    #[arg(long = "idle-timeout-ms", env = "ACKWIRE_IDLE_TIMEOUT_MS", default_value = "40000", value_parser = parse_duration_ms)]
    pub idle_timeout: Duration,
    /// Time a write to a client may take before it counts as not reading, in ms. Default 10000.
    #[arg(long = "write-timeout-ms", env = "ACKWIRE_WRITE_TIMEOUT_MS", default_value = "10000", value_parser = parse_duration_ms)]
    pub write_timeout: Duration,
    /// How long a peer whose link dropped keeps its id for a `resume`, in ms. Default 15000.
    #[arg(long = "reconnect-grace-ms", env = "ACKWIRE_RECONNECT_GRACE_MS", default_value = "15000", value_parser = parse_duration_ms)]
    pub reconnect_grace: Duration,
    /// Open connections allowed from one IP address; the next upgrade is refused with HTTP
    /// 429. Default 32. (Behind a reverse proxy every client has the proxy's address: raise
    /// it there, and let the proxy limit per client.)
    #[arg(long, env = "ACKWIRE_MAX_CONNECTIONS_PER_IP", default_value_t = 32)]
    pub max_connections_per_ip: usize,
    /// Rooms one IP address may create per minute (a burst of as many, refilled evenly); a
    /// join that would create one more gets `room_creation_limited`. Default 30.
    #[arg(long, env = "ACKWIRE_ROOMS_PER_IP_PER_MIN", default_value_t = 30)]
    pub rooms_per_ip_per_min: u32,
    /// Origins (`scheme://host[:port]`, comma-separated) whose pages may open `/ws`, besides
    /// the server's own origin and clients that send no `Origin` (natives). `*` allows every
    /// origin. Others are refused with HTTP 403. Default: none besides those.
    #[arg(long, env = "ACKWIRE_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,
    /// Secret that subscribing to every room (the all-rooms dashboard, `/dashboard#token=T`)
    /// requires, in the subscribe frame or as `Authorization: Bearer T` on the upgrade. Without
    /// one, the all-rooms subscription works only while the server listens on a loopback
    /// address. Prefer the environment variable: flags show in `ps`. Default: none.
    #[arg(long, env = "ACKWIRE_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// PEM certificate chain, the server's certificate first: serve HTTPS and WSS (needs
    /// `--tls-key`). Read at startup and again on SIGHUP (a renewed certificate). Default: plain HTTP.
    #[arg(long, env = "ACKWIRE_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `--tls-cert` (PKCS#8, RSA or EC).
    #[arg(long, env = "ACKWIRE_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// A file holding the secret shared with the game's backend, which mints join tickets with
    /// it (`ackwire_signalling::ticket`, docs/deployment.md). With it, every fresh join must
    /// carry a valid ticket for its room, role and application (`ticket` in the join's URL or
    /// frame), and a member's identity comes from its ticket. The file's bytes, without the
    /// whitespace around them, at least 32. Read once at start. Default: none: anyone who
    /// knows a room's name joins it.
    #[arg(long, env = "ACKWIRE_TICKET_SECRET_FILE", value_name = "PATH")]
    pub ticket_secret_file: Option<PathBuf>,
    /// Which fresh joins need a ticket, with `--ticket-secret-file`: `all`, or `hosts` (a host
    /// room's host alone; anyone else joins without one, and a ticket it carries anyway is
    /// checked).
    #[arg(
        long,
        env = "ACKWIRE_TICKETS_FOR",
        value_enum,
        default_value_t,
        requires = "ticket_secret_file"
    )]
    pub tickets_for: crate::tickets::TicketScope,
    /// `redis://HOST:PORT[/DB]`: share rooms with every other instance given the same Redis
    /// (docs/scale-out.md). Peers of one room may then connect to different instances, and a
    /// peer whose instance died resumes on another with its id. Default: none, rooms live in
    /// this process alone.
    #[arg(long, env = "ACKWIRE_REDIS", value_parser = parse_redis_url)]
    pub redis: Option<String>,
}

fn parse_redis_url(text: &str) -> Result<String, String> {
    redis::Client::open(text)
        .map(|_| text.to_owned())
        .map_err(|e| format!("not a Redis URL ({e}); expected redis://HOST:PORT[/DB]"))
}

impl Default for Config {
    fn default() -> Self {
        Self::parse_from(["ackwire-signal"])
    }
}

impl Config {
    /// The TURN server and its credential scheme, if `--turn-url` is given.
    pub fn turn(&self) -> Option<crate::turn::Turn> {
        crate::turn::Turn::new(
            self.turn_urls.clone(),
            self.turn_secret.clone().unwrap_or_default(),
            self.turn_ttl,
        )
    }

    /// The join tickets' secret, read from `--ticket-secret-file` (none without it); an error
    /// names the flag, the file and what is wrong with it.
    pub fn tickets(&self) -> Result<Option<crate::tickets::TicketSecret>, String> {
        self.ticket_secret_file
            .as_deref()
            .map(crate::tickets::TicketSecret::load)
            .transpose()
            .map(|secret| secret.map(|secret| secret.with_scope(self.tickets_for)))
    }

    /// What cannot be served as configured, checked before anything is: two `--static`
    /// directories on one path.
    pub fn check(&self) -> Result<(), String> {
        for (i, a) in self.statics.iter().enumerate() {
            if self.statics[..i].iter().any(|b| b.path == a.path) {
                return Err(format!("--static {} is given twice", a.path));
            }
        }
        Ok(())
    }

    /// Messages larger than this close the connection (the WebSocket layer's hard cap).
    pub fn hard_message_cap(&self) -> usize {
        self.max_message_bytes.saturating_mul(4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ice_servers_flag_takes_a_json_array_of_rtc_ice_servers() {
        let config = Config::try_parse_from([
            "ackwire-signal",
            "--ice-servers",
            r#"[{"urls":["turn:127.0.0.1:3478"],"username":"u","credential":"c"}]"#,
        ])
        .unwrap();
        assert_eq!(
            config.ice_servers.0,
            vec![IceServer {
                urls: vec!["turn:127.0.0.1:3478".into()],
                username: "u".into(),
                credential: "c".into(),
            }]
        );
    }

    #[test]
    fn malformed_ice_servers_flag_is_rejected_with_an_example() {
        let err = Config::try_parse_from(["ackwire-signal", "--ice-servers", "stun:x"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected a JSON array like"), "{err}");
    }

    #[test]
    fn turn_flags_need_each_other_and_take_only_turn_urls() {
        let config = Config::try_parse_from([
            "ackwire-signal",
            "--turn-url",
            "turn:203.0.113.1:3478?transport=udp",
            "--turn-url",
            "turns:203.0.113.1:5349",
            "--turn-secret",
            "s3cret",
            "--turn-ttl",
            "600",
        ])
        .unwrap();
        assert_eq!(config.turn_urls.len(), 2);
        assert_eq!(config.turn_ttl, Duration::from_secs(600));
        assert!(config.turn().is_some());
        assert!(Config::default().turn().is_none(), "no TURN by default");
        for refused in [
            &["--turn-url", "turn:203.0.113.1:3478"][..],
            &["--turn-secret", "s3cret"],
            &["--turn-url", "stun:203.0.113.1:3478", "--turn-secret", "s"],
            &[
                "--turn-url",
                "turn:h:1",
                "--turn-secret",
                "s",
                "--turn-ttl",
                "0",
            ],
        ] {
            let args = std::iter::once("ackwire-signal").chain(refused.iter().copied());
            assert!(Config::try_parse_from(args).is_err(), "{refused:?}");
        }
    }

    #[test]
    fn static_dirs_take_one_free_path_segment_and_an_existing_directory() {
        let dir = std::env::temp_dir();
        let flag = |value: &str| Config::try_parse_from(["ackwire-signal", "--static", value]);
        let config = flag(&format!("/pong/={}", dir.display())).unwrap();
        assert_eq!(
            config.statics,
            vec![StaticDir {
                path: "/pong".into(),
                dir: dir.clone()
            }]
        );
        assert_eq!(
            flag(&format!("tag={}", dir.display())).unwrap().statics[0].path,
            "/tag"
        );
        for refused in [
            "/pong", "/=.", "/a/b=.", "/a.b=.", "/room=.", "/pkg=.", "/ws=.",
        ] {
            let refused = refused.replace('.', &dir.display().to_string());
            assert!(flag(&refused).is_err(), "{refused}");
        }
        assert!(flag("/pong=/no/such/dir").is_err());
        let twice = Config::try_parse_from([
            "ackwire-signal",
            "--static",
            &format!("/pong={}", dir.display()),
            "--static",
            &format!("/pong={}", dir.display()),
        ])
        .unwrap();
        assert!(twice.check().unwrap_err().contains("twice"));
    }

    #[test]
    fn durations_are_milliseconds() {
        let config =
            Config::try_parse_from(["ackwire-signal", "--reconnect-grace-ms", "250"]).unwrap();
        assert_eq!(config.reconnect_grace, Duration::from_millis(250));
    }
}
