//! What the public API costs: reliable 32-byte messages from one native program to another
//! over loopback UDP, through two `ackwire::Room`s (signalling, the room member, its reliable
//! carry-over, the driver's task) against two bare core `Connection`s driven by a minimal
//! socket loop, as `ackwire-peer listen` / `connect` drive theirs, in the same run.
//!
//! Run: `cargo bench -p ackwire-peer --bench room` (`-- --seconds S`, default 10). Prints a
//! summary and one JSON line.
//!
//! Each phase keeps the sender's window full (a message is queued whenever the link takes
//! one) for S seconds of steady state, after the link is up; the core paces packets (30/s in
//! good mode, the bulk window off), so both phases carry about the same messages per second, and what differs is
//! the CPU each message costs: the process's user + system time over the phase (both sides
//! run in this process), per message delivered. Plaintext, so the comparison is the API
//! alone (encryption costs both the same). The machine is shared: read the ratio, taken in
//! one run, not the absolute figures.

#[path = "support/signal.rs"]
mod signal;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use ackwire::{App, ChannelKind, Event, LinkState, Mode, Room, RoomConfig};
use ackwire_core::{Accept, Acceptor, Connection, ConnectionConfig, ConnectionEvent};

const MESSAGE: [u8; 32] = [0x5A; 32];
const CHANNEL: u8 = 1;

/// This process's CPU time (user + system) so far, from `/proc/self/stat`.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // `rest` starts at the 3rd field (the state), so utime (14th) and stime (15th) are here.
    let ticks = field(11) + field(12);
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}

/// A phase's result.
#[derive(Debug, Clone, Copy)]
struct Phase {
    messages: u64,
    seconds: f64,
    cpu: Duration,
}

impl Phase {
    fn per_second(&self) -> f64 {
        self.messages as f64 / self.seconds
    }

    fn cpu_us_per_message(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.messages.max(1) as f64
    }
}

fn connection_config() -> ConnectionConfig {
    let mut config = ConnectionConfig::default();
    config.packet.initial_mode = Mode::Good;
    // Both phases at the core's cadence, so both carry about the same messages per second
    // and the CPU per message is the comparison: a full window is a backlog, which the bulk
    // window would send as fast as each loop turns (measured by the core's `bulk` bench).
    config.packet.bulk_window_packets = 0;
    config
}

/// Two core connections over two UDP sockets, in one loop, as the peer's driver runs them.
fn core_phase(seconds: f64) -> Phase {
    let a_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    for s in [&a_socket, &b_socket] {
        s.set_nonblocking(true).unwrap();
    }
    let (a_addr, b_addr) = (
        a_socket.local_addr().unwrap(),
        b_socket.local_addr().unwrap(),
    );
    let config = connection_config();
    let start = Instant::now();
    let mut a = Connection::connect(config.clone(), Duration::ZERO).unwrap();
    let mut acceptor = Acceptor::new(config, rand::random()).unwrap();
    let mut b: Option<Connection> = None;
    let mut buf = vec![0u8; 1500];
    let mut reply = [0u8; 128];
    let mut delivered = 0u64;
    let mut counting: Option<(Instant, Duration, u64)> = None;
    let address = a_addr.to_string().into_bytes();
    loop {
        let now = start.elapsed();
        // a's side: keep the window full, send what is due, read.
        if a.state() == ackwire_core::ConnectionState::Connected {
            while a.send(CHANNEL, &MESSAGE).is_ok() {}
        }
        while let Ok(Some(len)) = a.poll_transmit(now, &mut buf) {
            let _ = a_socket.send_to(&buf[..len], b_addr);
        }
        while let Ok((len, _)) = a_socket.recv_from(&mut buf) {
            let _ = a.receive(now, &buf[..len]);
        }
        while a.poll_event().is_some() {}
        // b's side.
        while let Ok((len, _)) = b_socket.recv_from(&mut buf) {
            match &mut b {
                Some(b) => drop(b.receive(now, &buf[..len])),
                None => match acceptor.receive(now, &address, &buf[..len], &mut reply) {
                    Ok(Accept::Reply { len }) => drop(b_socket.send_to(&reply[..len], a_addr)),
                    Ok(Accept::Connection(c)) => b = Some(*c),
                    _ => {}
                },
            }
        }
        if let Some(b) = &mut b {
            while let Ok(Some(len)) = b.poll_transmit(now, &mut buf) {
                let _ = b_socket.send_to(&buf[..len], a_addr);
            }
            while let Some(event) = b.poll_event() {
                if let ConnectionEvent::Message { .. } = event {
                    delivered += 1;
                }
            }
        }
        // Steady state from one second after the start.
        if counting.is_none() && now > Duration::from_secs(1) {
            counting = Some((Instant::now(), cpu_time(), delivered));
        }
        if let Some((since, cpu, from)) = counting
            && since.elapsed().as_secs_f64() >= seconds
        {
            return Phase {
                messages: delivered - from,
                seconds: since.elapsed().as_secs_f64(),
                cpu: cpu_time() - cpu,
            };
        }
        let next = [
            a.poll_timeout(),
            b.as_ref().and_then(Connection::poll_timeout),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(now + Duration::from_millis(1));
        // A socket loop would wait on the sockets; a 1 ms cap stands in for that.
        std::thread::sleep(
            next.saturating_sub(start.elapsed())
                .min(Duration::from_millis(1)),
        );
    }
}

/// Two rooms of one app through a signal server in this process, as two games would be.
async fn room_phase(server: SocketAddr, seconds: f64) -> Phase {
    let app = App::new(
        "bench",
        1,
        [
            ChannelKind::UnreliableSequenced,
            ChannelKind::ReliableOrdered,
        ],
    );
    let mut config = RoomConfig::new(app);
    config.native.bind = "127.0.0.1:0".parse().unwrap();
    config.native.encrypt = false;
    config.connection = connection_config();
    let url = format!("http://{server}/room/bench");
    let mut a = Room::join(&url, config.clone()).unwrap();
    let mut b = Room::join(&url, config).unwrap();
    let to_b = loop {
        if let Some(Event::Link(l)) = a.next_event().await
            && l.state == LinkState::Connected
        {
            break l.peer;
        }
    };
    let sender = tokio::spawn(async move {
        loop {
            while a.send(to_b, CHANNEL, &MESSAGE).is_ok() {}
            tokio::time::sleep(Duration::from_millis(1)).await;
            while a.poll_event().is_some() {}
        }
    });
    let mut delivered = 0u64;
    let start = Instant::now();
    let mut counting: Option<(Instant, Duration, u64)> = None;
    loop {
        if let Ok(Some(Event::Message { .. })) =
            tokio::time::timeout(Duration::from_millis(100), b.next_event()).await
        {
            delivered += 1;
        }
        if counting.is_none() && start.elapsed() > Duration::from_secs(1) {
            counting = Some((Instant::now(), cpu_time(), delivered));
        }
        if let Some((since, cpu, from)) = counting
            && since.elapsed().as_secs_f64() >= seconds
        {
            sender.abort();
            return Phase {
                messages: delivered - from,
                seconds: since.elapsed().as_secs_f64(),
                cpu: cpu_time() - cpu,
            };
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seconds = args
        .iter()
        .position(|a| a == "--seconds")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let core = core_phase(seconds);
    let room = runtime.block_on(async {
        let addr = signal::start(|_| {}).await;
        room_phase(addr, seconds).await
    });
    println!(
        "reliable 32-byte messages, one native to another over loopback UDP, {seconds} s each:"
    );
    for (name, phase) in [
        ("core connections (listen/connect's loop)", core),
        ("ackwire::Room", room),
    ] {
        println!(
            "  {name:<42} {:>8.0} msgs/s  {:>6.2} µs CPU per message",
            phase.per_second(),
            phase.cpu_us_per_message()
        );
    }
    let rate = room.per_second() / core.per_second();
    let cpu = room.cpu_us_per_message() / core.cpu_us_per_message();
    println!(
        "  Room / core: {:.1} % of the messages per second, {cpu:.2}x the CPU per message",
        rate * 100.0
    );
    println!(
        "{}",
        serde_json::json!({
            "bench": "room", "seconds": seconds,
            "core_msgs_per_s": core.per_second(), "room_msgs_per_s": room.per_second(),
            "core_cpu_us_per_msg": core.cpu_us_per_message(),
            "room_cpu_us_per_msg": room.cpu_us_per_message(),
            "rate_ratio": rate, "cpu_ratio": cpu,
        })
    );
}
