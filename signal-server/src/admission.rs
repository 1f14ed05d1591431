//! Who may open `/ws`, and how fast one address may create rooms: the limits that hold per
//! client address rather than per connection.
//!
//! An IPv6 client is counted by its /64, the block one host or home is normally given, so
//! rotating addresses within it does not escape the limits.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex, MutexGuard},
    time::Instant,
};

use axum::http::{HeaderMap, header};

use crate::config::Config;

/// The key an address is counted under.
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut octets = v6.octets();
                octets[8..].fill(0);
                IpAddr::V6(octets.into())
            }
        },
    }
}

/// Why an upgrade was refused before it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The page's origin is not the server's own nor in `--allowed-origins` (HTTP 403).
    Origin,
    /// The address already holds `--max-connections-per-ip` connections (HTTP 429).
    PerIpLimit,
}

impl Refusal {
    /// The `reason` label in `/metrics`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Origin => "origin",
            Self::PerIpLimit => "per_ip_limit",
        }
    }
}

#[derive(Debug)]
struct PerClient {
    connections: usize,
    /// Room creations left; refilled at `--rooms-per-ip-per-min`.
    room_tokens: f64,
    refilled: Instant,
}

impl PerClient {
    fn refill(&mut self, per_min: u32, now: Instant) {
        let per_sec = f64::from(per_min) / 60.0;
        let elapsed = now.duration_since(self.refilled).as_secs_f64();
        self.room_tokens = (self.room_tokens + elapsed * per_sec).min(f64::from(per_min));
        self.refilled = now;
    }

    /// Nothing to remember: no connection, and a full room budget.
    fn is_idle(&self, per_min: u32) -> bool {
        self.connections == 0 && self.room_tokens >= f64::from(per_min)
    }
}

/// Per-address connection counts and room-creation budgets. An address is remembered only
/// while it has a connection open or a budget still refilling.
#[derive(Debug)]
pub struct Admission {
    config: Arc<Config>,
    clients: Mutex<HashMap<IpAddr, PerClient>>,
}

/// One admitted connection; dropping it frees its place in its address's count.
#[derive(Debug)]
pub struct Permit {
    admission: Arc<Admission>,
    key: IpAddr,
}

impl Permit {
    /// The address (its /64 for IPv6) the connection is counted under.
    pub fn client(&self) -> IpAddr {
        self.key
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let per_min = self.admission.config.rooms_per_ip_per_min;
        let mut clients = self.admission.lock();
        if let Some(c) = clients.get_mut(&self.key) {
            c.connections -= 1;
            c.refill(per_min, Instant::now());
            if c.is_idle(per_min) {
                clients.remove(&self.key);
            }
        }
    }
}

impl Admission {
    /// Nobody connected yet.
    pub fn new(config: Arc<Config>) -> Self {
        Admission {
            config,
            clients: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<IpAddr, PerClient>> {
        // Every mutation is a single counter update: consistent across a panic.
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admit one more connection from `ip`, or refuse it because the address holds its
    /// share already.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Permit, Refusal> {
        let key = client_key(ip);
        let now = Instant::now();
        let per_min = self.config.rooms_per_ip_per_min;
        let mut clients = self.lock();
        if clients.len() > 1024 && clients.len().is_power_of_two() {
            // Addresses that left while their budget refilled are forgotten once it is full.
            clients.retain(|_, c| {
                c.refill(per_min, now);
                !c.is_idle(per_min)
            });
        }
        let c = clients.entry(key).or_insert_with(|| PerClient {
            connections: 0,
            room_tokens: f64::from(per_min),
            refilled: now,
        });
        if c.connections >= self.config.max_connections_per_ip {
            return Err(Refusal::PerIpLimit);
        }
        c.connections += 1;
        Ok(Permit {
            admission: Arc::clone(self),
            key,
        })
    }

    /// Spend one room creation of the address `permit` is counted under; false when its
    /// budget is used up.
    pub fn create_room(&self, client: IpAddr) -> bool {
        let per_min = self.config.rooms_per_ip_per_min;
        let mut clients = self.lock();
        let Some(c) = clients.get_mut(&client) else {
            return false;
        };
        c.refill(per_min, Instant::now());
        if c.room_tokens >= 1.0 {
            c.room_tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Addresses remembered now (for tests and the `/metrics` gauge).
    pub fn clients(&self) -> usize {
        self.lock().len()
    }

    /// Whether a page from the request's `Origin` may open `/ws`: no `Origin` (natives and
    /// other non-browser clients send none), the server's own origin (its host and port equal
    /// the request's `Host`), or one of `--allowed-origins` (`*`: any).
    pub fn origin_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(origin) = headers.get(header::ORIGIN) else {
            return true;
        };
        let Ok(origin) = origin.to_str() else {
            return false;
        };
        let origin = origin.trim_end_matches('/');
        if self
            .config
            .allowed_origins
            .iter()
            .any(|o| o == "*" || o.trim_end_matches('/').eq_ignore_ascii_case(origin))
        {
            return true;
        }
        // Same origin: compare authorities, as the scheme a proxy terminated TLS for is not
        // visible here.
        let authority = origin.split_once("://").map_or(origin, |(_, rest)| rest);
        headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .is_some_and(|host| host.eq_ignore_ascii_case(authority))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn admission(tweak: impl FnOnce(&mut Config)) -> Arc<Admission> {
        let mut config = Config::default();
        tweak(&mut config);
        Arc::new(Admission::new(Arc::new(config)))
    }

    fn headers(origin: Option<&str>, host: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        if let Some(o) = origin {
            h.insert(header::ORIGIN, HeaderValue::from_str(o).unwrap());
        }
        h
    }

    #[test]
    fn an_address_gets_its_share_of_connections_and_a_closed_one_frees_its_place() {
        let a = admission(|c| c.max_connections_per_ip = 2);
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let one = a.admit(ip).unwrap();
        let _two = a.admit(ip).unwrap();
        assert_eq!(a.admit(ip).unwrap_err(), Refusal::PerIpLimit);
        assert!(a.admit("192.0.2.8".parse().unwrap()).is_ok());
        drop(one);
        assert!(a.admit(ip).is_ok());
    }

    #[test]
    fn ipv6_addresses_of_one_64_share_a_count_and_mapped_v4_counts_as_v4() {
        let a = admission(|c| c.max_connections_per_ip = 1);
        let _p = a.admit("2001:db8:1:2::1".parse().unwrap()).unwrap();
        assert!(a.admit("2001:db8:1:2:ffff::9".parse().unwrap()).is_err());
        assert!(a.admit("2001:db8:1:3::1".parse().unwrap()).is_ok());
        let _v4 = a.admit("192.0.2.1".parse().unwrap()).unwrap();
        assert!(a.admit("::ffff:192.0.2.1".parse().unwrap()).is_err());
    }

    #[test]
    fn room_creations_per_address_are_budgeted_and_forgotten_addresses_leave_no_state() {
        let a = admission(|c| c.rooms_per_ip_per_min = 3);
        let p = a.admit("192.0.2.7".parse().unwrap()).unwrap();
        assert_eq!((0..5).filter(|_| a.create_room(p.client())).count(), 3);
        let other = a.admit("192.0.2.8".parse().unwrap()).unwrap();
        assert!(a.create_room(other.client()), "budgets are per address");
        let passer_by = a.admit("192.0.2.9".parse().unwrap()).unwrap();
        drop((other, p, passer_by));
        // Two budgets are still refilling; the address that created nothing is forgotten.
        assert_eq!(a.clients(), 2);
    }

    #[test]
    fn origins_allowed_are_none_the_servers_own_and_the_listed_ones() {
        let a = admission(|c| c.allowed_origins = vec!["https://game.example".into()]);
        assert!(a.origin_allowed(&headers(None, "127.0.0.1:8080")));
        assert!(a.origin_allowed(&headers(Some("http://127.0.0.1:8080"), "127.0.0.1:8080")));
        assert!(a.origin_allowed(&headers(Some("https://Signal.Example"), "signal.example")));
        assert!(a.origin_allowed(&headers(Some("https://game.example"), "signal.example")));
        assert!(!a.origin_allowed(&headers(Some("https://evil.example"), "signal.example")));
        assert!(!a.origin_allowed(&headers(Some("http://127.0.0.1:9999"), "127.0.0.1:8080")));
        assert!(!a.origin_allowed(&headers(Some("null"), "127.0.0.1:8080")));
        let any = admission(|c| c.allowed_origins = vec!["*".into()]);
        assert!(any.origin_allowed(&headers(Some("https://evil.example"), "x")));
    }
}
