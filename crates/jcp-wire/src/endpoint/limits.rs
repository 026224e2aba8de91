//! Issue 34, "Unauthenticated traffic grows the durable record without
//! bound": per-source rate limits, applied on the connection before
//! anything reaches the core (a request over them is not decided, so
//! nothing is recorded for it), and the sources they count by.
//!
//! Two limits, each a token bucket per source: the requests (and feed
//! messages and statement asks) a source may send a second (off unless the
//! operator sets it), and the **refusals** a source may cost a second: each
//! request refused before it was decided (`bad-signature`, `stale-request`)
//! or shed by the record's high-water mark takes one, as does a feed that
//! does not authenticate and a statement ask for a channel the endpoint
//! does not hold. A source that spends its refusals
//! is answered `rate-limited` (and its connection closed) until its bucket
//! refills, so what its garbage costs the record is bounded by the rate,
//! while every other source is decided as before.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where a connection comes from: what its limits count by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// A TCP peer, by its address as [`peer_of`] groups it (an IPv6 peer
    /// by its /64).
    Ip(std::net::IpAddr),
    /// A Unix-socket peer, by its user id (`SO_PEERCRED`).
    Uid(u32),
    /// A Unix-socket peer whose credentials could not be read, or a client
    /// connected in-process: one source together.
    Local,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ip(ip @ std::net::IpAddr::V6(_)) => write!(f, "{ip}/64"),
            Self::Ip(ip) => write!(f, "{ip}"),
            Self::Uid(u) => write!(f, "uid {u}"),
            Self::Local => f.write_str("local"),
        }
    }
}

/// The address a TCP peer's limits (its connections, its rates) count it
/// by: an IPv4 address itself (an IPv4-mapped IPv6 one as the IPv4 it
/// maps); an IPv6 address by its /64, the least a site is given, so a
/// host that takes a fresh address of its /64 for each connection is
/// still one peer (issue 34: per-source limits that fail closed).
pub fn peer_of(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V4(_) => ip,
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.into(),
            None => std::net::Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX)).into(),
        },
    }
}

/// A rate: so many a second, with room for a burst of so many at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Tokens added a second.
    pub per_s: f64,
    /// The most tokens a bucket holds (a burst at once).
    pub burst: f64,
}

impl Rate {
    /// `per_s` a second with a burst of twice that (at least 1).
    pub fn per_second(per_s: u32) -> Self {
        Self { per_s: f64::from(per_s), burst: f64::from(per_s.saturating_mul(2).max(1)) }
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The most sources a limiter keeps a bucket for; past it, buckets that
/// have refilled are dropped (a full bucket is what a new source gets).
const MAX_SOURCES: usize = 65_536;

/// Token buckets per source.
#[derive(Debug)]
pub struct Limiter {
    rate: Rate,
    buckets: Mutex<HashMap<Source, Bucket>>,
}

impl Limiter {
    /// A limiter at `rate`.
    pub fn new(rate: Rate) -> Self {
        Self { rate, buckets: Mutex::new(HashMap::new()) }
    }

    /// Its rate.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    fn refill(&self, b: &mut Bucket, now: Instant) {
        let dt = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + dt * self.rate.per_s).min(self.rate.burst);
        b.at = now;
    }

    /// Whether `source` has a token now (none is taken).
    pub fn has(&self, source: Source) -> bool {
        let now = Instant::now();
        let mut m = self.buckets.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match m.get_mut(&source) {
            None => true,
            Some(b) => {
                self.refill(b, now);
                b.tokens >= 1.0
            }
        }
    }

    /// Takes one token of `source`'s; `false` when it had none left.
    pub fn take(&self, source: Source) -> bool {
        let now = Instant::now();
        let mut m = self.buckets.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if m.len() >= MAX_SOURCES && !m.contains_key(&source) {
            let rate = self.rate;
            m.retain(|_, b| b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * rate.per_s < rate.burst);
        }
        let b = m.entry(source).or_insert(Bucket { tokens: self.rate.burst, at: now });
        self.refill(b, now);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Milliseconds until `source` has a token again (0: it has one).
    pub fn wait_ms(&self, source: Source) -> u64 {
        let m = self.buckets.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(b) = m.get(&source) else { return 0 };
        let have = b.tokens + Instant::now().saturating_duration_since(b.at).as_secs_f64() * self.rate.per_s;
        if have >= 1.0 || self.rate.per_s <= 0.0 {
            return 0;
        }
        // A whole number of milliseconds, rounded up, at most an hour.
        let wait = Duration::from_secs_f64(((1.0 - have) / self.rate.per_s).min(3600.0));
        u64::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(3_600_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 34: an IPv6 peer is one peer for its whole /64 (a host may
    /// take a fresh address of it for every connection), an IPv4-mapped
    /// address is the IPv4 peer it maps, an IPv4 address is itself.
    #[test]
    fn s11_an_ipv6_peer_is_counted_by_its_64_and_a_mapped_ipv4_as_itself() {
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        assert_eq!(peer_of(ip("2001:db8:1:2:aaaa::1")), peer_of(ip("2001:db8:1:2:ffff:1:2:3")));
        assert_eq!(peer_of(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_ne!(peer_of(ip("2001:db8:1:2::1")), peer_of(ip("2001:db8:1:3::1")));
        assert_eq!(peer_of(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(peer_of(ip("192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(peer_of(ip("::1")), ip("::"), "loopback too: one peer");
        assert_eq!(Source::Ip(peer_of(ip("2001:db8::5"))).to_string(), "2001:db8::/64");
    }

    #[test]
    fn s11_a_source_spends_its_burst_then_waits_and_others_are_untouched() {
        let l = Limiter::new(Rate { per_s: 1.0, burst: 3.0 });
        let a = Source::Ip(std::net::IpAddr::from([127, 0, 0, 2]));
        let b = Source::Uid(1000);
        assert!(l.has(a));
        assert!((0..3).all(|_| l.take(a)), "the burst");
        assert!(!l.take(a) && !l.has(a), "then nothing until it refills");
        assert!(l.wait_ms(a) > 0 && l.wait_ms(a) <= 1000);
        assert!(l.take(b) && l.take(Source::Local), "another source has its own bucket");
        assert_eq!(l.wait_ms(b), 0);
    }
}
