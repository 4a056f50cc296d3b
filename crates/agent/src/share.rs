//! Shares of the agent's front door by address and by prefix: how many connections, unverified
//! password checks and probe requests one caller may hold, and which idle connection gives way
//! when the endpoint is full. Plain data and arithmetic (no sockets, no clocks), so every rule
//! is tested here; [`crate::http`] holds one of each behind a lock.
//!
//! A caller is counted at every level it belongs to: its address, and for IPv6 also its /64,
//! /56 and /48 (an IPv4-mapped IPv6 address counts as its IPv4 address). Each level has its
//! share of the total, so four addresses of one /64 together get the /64's share, not four
//! address shares, and one site's /64s together get the /48's.
//!
//! Connections are also told apart by progress: one whose request has not arrived yet (a TLS
//! handshake or headers in progress, or nothing at all) is *idle*; one whose request is being
//! answered is *busy*. Idle connections give way, the oldest first:
//! - a caller at its share at some level closes its own oldest idle connection of that level
//!   to open a new one (it cannot grow, and its newest connection is the one likely to send a
//!   request);
//! - when the endpoint is full, a new caller closes the oldest idle connection of the caller
//!   (an IPv4 address, or an IPv6 /48) holding the most, when that one holds more than the new
//!   caller does. Many callers filling the endpoint with idle connections therefore cannot
//!   keep another out, and two callers never take a place back and forth.
//!
//! Busy connections never give way; they are bounded by the same shares and, for the slow
//! ones, by the shares of unverified checks and probe requests.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv6Addr};

/// The levels a caller is counted at, narrowest first.
pub const LEVELS: [Level; 4] = [Level::Address, Level::P64, Level::P56, Level::P48];

/// One level of accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// The caller's address (IPv4 or IPv6).
    Address,
    /// Its IPv6 /64.
    P64,
    /// Its IPv6 /56.
    P56,
    /// Its IPv6 /48.
    P48,
}

impl Level {
    fn index(self) -> usize {
        self as usize
    }

    fn prefix_len(self) -> u8 {
        match self {
            Level::Address => 128,
            Level::P64 => 64,
            Level::P56 => 56,
            Level::P48 => 48,
        }
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Level::Address => "address",
            Level::P64 => "/64",
            Level::P56 => "/56",
            Level::P48 => "/48",
        })
    }
}

/// A group of callers counted together: one address, or one IPv6 prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    Address(IpAddr),
    /// The prefix's bits (the rest zero) and its length.
    V6(u128, u8),
}

impl Group {
    /// The group of `ip` at `level`; `None` for an IPv4 address above [`Level::Address`].
    pub fn of(ip: IpAddr, level: Level) -> Option<Group> {
        let ip = canonical(ip);
        match (ip, level) {
            (_, Level::Address) => Some(Group::Address(ip)),
            (IpAddr::V4(_), _) => None,
            (IpAddr::V6(a), l) => {
                let len = l.prefix_len();
                let mask = !0u128 << (128 - u32::from(len));
                Some(Group::V6(u128::from(a) & mask, len))
            }
        }
    }

    /// The widest group of `ip`: its IPv4 address, or its IPv6 /48 (the caller that gives way
    /// when the endpoint is full).
    pub fn widest(ip: IpAddr) -> Group {
        Group::of(ip, Level::P48).unwrap_or(Group::Address(canonical(ip)))
    }
}

impl std::fmt::Display for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Group::Address(a) => write!(f, "{a}"),
            Group::V6(p, len) => write!(f, "{}/{len}", Ipv6Addr::from(*p)),
        }
    }
}

/// An IPv4-mapped IPv6 address as its IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The groups of `ip`, level by level.
fn groups(ip: IpAddr) -> impl Iterator<Item = (Level, Group)> {
    LEVELS
        .into_iter()
        .filter_map(move |l| Group::of(ip, l).map(|g| (l, g)))
}

/// How much of something the endpoint has, and how much of it one group may hold per level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shares {
    pub total: usize,
    /// Per [`LEVELS`] entry.
    pub per: [usize; 4],
}

impl Shares {
    /// `total` split as eighths: an address `address` eighths of it, a /64 `p64`, a /56 and a
    /// /48 `p48` (each at least one).
    pub fn eighths(total: usize, address: usize, p64: usize, p48: usize) -> Shares {
        let part = |n: usize| (total * n / 8).max(1);
        Shares {
            total: total.max(1),
            per: [part(address), part(p64), part(p48), part(p48)],
        }
    }

    /// `--web.max-connections`: an address an eighth, a /64 a quarter, a /56 and a /48 half.
    pub fn connections(total: usize) -> Shares {
        Shares::eighths(total, 1, 2, 4)
    }

    /// Probe requests waiting or running: an address or a /64 a quarter, a /56 or /48 half.
    pub fn probes(total: usize) -> Shares {
        Shares::eighths(total, 2, 2, 4)
    }

    /// Unverified password checks waiting or running: an address or a /64 an eighth, a /56 or
    /// /48 a quarter.
    pub fn unverified(total: usize) -> Shares {
        Shares::eighths(total, 1, 1, 2)
    }
}

/// Why something was not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The caller's group at this level holds its share.
    Share(Level, usize),
    /// The endpoint holds its total.
    Full(usize),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Share(Level::Address, n) => write!(f, "your address holds its share ({n})"),
            Refused::Share(l, n) => write!(f, "your {l} holds its share ({n})"),
            Refused::Full(n) => write!(f, "all {n} are taken"),
        }
    }
}

/// Counts per group, against [`Shares`].
#[derive(Debug)]
pub struct Counter {
    shares: Shares,
    counts: HashMap<Group, usize>,
    total: usize,
}

impl Counter {
    pub fn new(shares: Shares) -> Counter {
        Counter {
            shares,
            counts: HashMap::new(),
            total: 0,
        }
    }

    pub fn shares(&self) -> Shares {
        self.shares
    }

    /// What `g` holds.
    pub fn held(&self, g: Group) -> usize {
        self.counts.get(&g).copied().unwrap_or(0)
    }

    /// What the endpoint holds.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The first level at which `ip` holds its share, if any.
    fn over_share(&self, ip: IpAddr) -> Option<(Level, Group)> {
        groups(ip).find(|(l, g)| self.held(*g) >= self.shares.per[l.index()])
    }

    /// Take one for `ip` when its shares and the total allow.
    pub fn take(&mut self, ip: IpAddr) -> Result<(), Refused> {
        if let Some((l, _)) = self.over_share(ip) {
            return Err(Refused::Share(l, self.shares.per[l.index()]));
        }
        if self.total >= self.shares.total {
            return Err(Refused::Full(self.shares.total));
        }
        self.add(ip);
        Ok(())
    }

    fn add(&mut self, ip: IpAddr) {
        for (_, g) in groups(ip) {
            *self.counts.entry(g).or_insert(0) += 1;
        }
        self.total += 1;
    }

    /// Give back one that `ip` took.
    pub fn give_back(&mut self, ip: IpAddr) {
        for (_, g) in groups(ip) {
            if let Some(n) = self.counts.get_mut(&g) {
                *n -= 1;
                if *n == 0 {
                    self.counts.remove(&g);
                }
            }
        }
        self.total = self.total.saturating_sub(1);
    }
}

struct Conn<H> {
    ip: IpAddr,
    busy: bool,
    handle: H,
}

/// The endpoint's connections: counted per group, told apart by progress, the oldest idle
/// giving way (see the module's text). `H` is what closes a connection (handed back to the
/// caller of [`ConnTable::admit`] for each connection that must close).
pub struct ConnTable<H> {
    counter: Counter,
    /// By age: ids only grow.
    conns: BTreeMap<u64, Conn<H>>,
    next: u64,
}

/// What [`ConnTable::admit`] decided.
pub struct Admission<H> {
    /// The new connection's id, or why it is refused.
    pub result: Result<u64, Refused>,
    /// Idle connections to close now (they are no longer counted).
    pub evicted: Vec<H>,
}

impl<H> ConnTable<H> {
    pub fn new(shares: Shares) -> ConnTable<H> {
        ConnTable {
            counter: Counter::new(shares),
            conns: BTreeMap::new(),
            next: 0,
        }
    }

    /// Connections held (all of them, or those of one group).
    pub fn held(&self, g: Option<Group>) -> usize {
        g.map_or(self.counter.total(), |g| self.counter.held(g))
    }

    fn remove(&mut self, id: u64) -> Option<H> {
        let c = self.conns.remove(&id)?;
        self.counter.give_back(c.ip);
        Some(c.handle)
    }

    /// The oldest idle connection whose caller is in `g`.
    fn oldest_idle_in(&self, level: Level, g: Group) -> Option<u64> {
        self.conns
            .iter()
            .find(|(_, c)| !c.busy && Group::of(c.ip, level) == Some(g))
            .map(|(id, _)| *id)
    }

    /// The oldest idle connection of the widest group holding the most, when it holds more
    /// than `newcomer` does.
    fn victim_for(&self, newcomer: IpAddr) -> Option<u64> {
        let mine = self.counter.held(Group::widest(newcomer));
        let mut best: Option<(usize, u64)> = None;
        for (id, c) in self.conns.iter().filter(|(_, c)| !c.busy) {
            let n = self.counter.held(Group::widest(c.ip));
            // oldest first: a later one replaces it only when its caller holds more
            if n > mine && best.is_none_or(|(m, _)| n > m) {
                best = Some((n, *id));
            }
        }
        best.map(|(_, id)| id)
    }

    /// A new connection from `ip`, which `handle` closes.
    pub fn admit(&mut self, ip: IpAddr, handle: H) -> Admission<H> {
        let mut evicted = Vec::new();
        // the caller's own oldest idle connections make room for its new one
        while let Some((level, g)) = self.counter.over_share(ip) {
            match self.oldest_idle_in(level, g) {
                Some(id) => evicted.extend(self.remove(id)),
                None => {
                    let share = self.counter.shares().per[level.index()];
                    return Admission {
                        result: Err(Refused::Share(level, share)),
                        evicted,
                    };
                }
            }
        }
        if self.counter.total() >= self.counter.shares().total {
            match self.victim_for(ip) {
                Some(id) => evicted.extend(self.remove(id)),
                None => {
                    return Admission {
                        result: Err(Refused::Full(self.counter.shares().total)),
                        evicted,
                    }
                }
            }
        }
        self.counter.add(ip);
        let id = self.next;
        self.next += 1;
        self.conns.insert(
            id,
            Conn {
                ip,
                busy: false,
                handle,
            },
        );
        Admission {
            result: Ok(id),
            evicted,
        }
    }

    /// The connection's request arrived: it no longer gives way. `false` when it was already
    /// closed to make room.
    pub fn busy(&mut self, id: u64) -> bool {
        match self.conns.get_mut(&id) {
            Some(c) => {
                c.busy = true;
                true
            }
            None => false,
        }
    }

    /// The connection ended (nothing when it was closed to make room).
    pub fn close(&mut self, id: u64) {
        self.remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn groups_by_level_and_mapped_addresses_count_as_ipv4() {
        let a = ip("2001:db8:1:2:3::9");
        assert_eq!(
            Group::of(a, Level::P64).unwrap().to_string(),
            "2001:db8:1:2::/64"
        );
        assert_eq!(
            Group::of(a, Level::P56).unwrap().to_string(),
            "2001:db8:1::/56"
        );
        assert_eq!(
            Group::of(a, Level::P48).unwrap().to_string(),
            "2001:db8:1::/48"
        );
        assert_eq!(Group::of(ip("192.0.2.1"), Level::P64), None);
        assert_eq!(
            Group::of(ip("::ffff:192.0.2.1"), Level::Address),
            Some(Group::Address(ip("192.0.2.1")))
        );
        assert_eq!(
            Group::widest(ip("::ffff:192.0.2.1")).to_string(),
            "192.0.2.1"
        );
    }

    #[test]
    fn shares_are_parts_of_the_total_and_never_zero() {
        assert_eq!(Shares::connections(64).per, [8, 16, 32, 32]);
        assert_eq!(Shares::connections(1).per, [1, 1, 1, 1]);
        assert_eq!(Shares::probes(16).per, [4, 4, 8, 8]);
        assert_eq!(Shares::unverified(16).per, [2, 2, 4, 4]);
    }

    #[test]
    fn addresses_of_one_prefix_share_the_prefix_share() {
        let mut c = Counter::new(Shares::probes(16));
        // four addresses of one /64: four probes between them, not four each
        let mut got = 0;
        for i in 1..=4 {
            for _ in 0..4 {
                got += usize::from(c.take(ip(&format!("2001:db8:1:2::{i}"))).is_ok());
            }
        }
        assert_eq!(got, 4);
        assert_eq!(
            c.take(ip("2001:db8:1:2::5")),
            Err(Refused::Share(Level::P64, 4))
        );
        // another /64 of the same /48 gets its own /64 share, up to the /48's
        let mut more = 0;
        for i in 0..8 {
            more += usize::from(c.take(ip(&format!("2001:db8:1:{}::1", 3 + i))).is_ok());
        }
        assert_eq!(more, 4);
        assert_eq!(
            c.take(ip("2001:db8:1:ff::1")),
            Err(Refused::Share(Level::P56, 8))
        );
        // another site and an IPv4 address are untouched by it
        assert!(c.take(ip("2001:db8:2::1")).is_ok());
        assert!(c.take(ip("192.0.2.1")).is_ok());
        // room in the /56, but not in the first /64 until one of its own is given back
        c.give_back(ip("2001:db8:1:3::1"));
        assert_eq!(
            c.take(ip("2001:db8:1:2::4")),
            Err(Refused::Share(Level::P64, 4))
        );
        c.give_back(ip("2001:db8:1:2::3"));
        assert!(c.take(ip("2001:db8:1:2::4")).is_ok());
    }

    #[test]
    fn the_total_is_a_limit_too() {
        let mut c = Counter::new(Shares::unverified(16));
        for i in 0..16 {
            c.take(ip(&format!("192.0.2.{i}"))).unwrap();
        }
        assert_eq!(c.take(ip("192.0.2.99")), Err(Refused::Full(16)));
    }

    /// Idle connections from a few addresses, reopened as fast as they close, as the attack
    /// does: (connections admitted for the scraper, refused).
    fn attack(attackers: &[IpAddr], scraper: IpAddr, rounds: usize) -> (usize, usize) {
        let mut t: ConnTable<u64> = ConnTable::new(Shares::connections(64));
        let mut open: Vec<u64> = Vec::new();
        let (mut ok, mut refused) = (0, 0);
        for _ in 0..rounds {
            for a in attackers {
                for _ in 0..16 {
                    let adm = t.admit(*a, 0);
                    if let Ok(id) = adm.result {
                        open.push(id);
                    }
                }
            }
            let adm = t.admit(scraper, 0);
            match adm.result {
                Ok(id) => {
                    ok += 1;
                    assert!(t.busy(id));
                    t.close(id);
                }
                Err(_) => refused += 1,
            }
        }
        (ok, refused)
    }

    #[test]
    fn a_few_addresses_or_one_prefix_cannot_keep_a_scraper_out() {
        let v4: Vec<IpAddr> = (2..6).map(|i| ip(&format!("127.0.0.{i}"))).collect();
        assert_eq!(attack(&v4, ip("127.0.0.9"), 20), (20, 0));
        let v6: Vec<IpAddr> = (2..6).map(|i| ip(&format!("2001:db8:1:2::{i}"))).collect();
        assert_eq!(attack(&v6, ip("2001:db8:9::1"), 20), (20, 0));
        // a scraper in the attackers' own /64 still gets in: their oldest idle gives way
        assert_eq!(attack(&v6, ip("2001:db8:1:2::99"), 20).0, 20);
        // 64 addresses holding one idle connection each: the oldest gives way
        let many: Vec<IpAddr> = (0..64).map(|i| ip(&format!("10.0.0.{i}"))).collect();
        assert_eq!(attack(&many, ip("127.0.0.9"), 20), (20, 0));
    }

    #[test]
    fn an_address_at_its_share_closes_its_own_oldest_idle_connection() {
        let mut t: ConnTable<u64> = ConnTable::new(Shares::connections(64));
        let a = ip("192.0.2.1");
        let ids: Vec<u64> = (0..8).map(|n| t.admit(a, n).result.unwrap()).collect();
        assert!(t.busy(ids[0]));
        let adm = t.admit(a, 8);
        assert!(adm.result.is_ok());
        assert_eq!(
            adm.evicted,
            vec![1],
            "the oldest idle one, not the busy one"
        );
        assert!(!t.busy(ids[1]), "closed");
        assert_eq!(t.held(Some(Group::Address(a))), 8);
        // all busy: refused, nothing closed
        for id in ids.iter().skip(2) {
            t.busy(*id);
        }
        t.busy(adm.result.unwrap());
        let adm = t.admit(a, 9);
        assert_eq!(adm.result, Err(Refused::Share(Level::Address, 8)));
        assert!(adm.evicted.is_empty());
    }

    #[test]
    fn a_full_endpoint_takes_from_the_greediest_and_never_back_and_forth() {
        let mut t: ConnTable<IpAddr> = ConnTable::new(Shares::connections(8));
        // shares of 8: an address 1, so eight addresses fill it
        for i in 0..8 {
            let a = ip(&format!("192.0.2.{i}"));
            assert!(t.admit(a, a).result.is_ok());
        }
        // a ninth address takes the oldest idle place (everyone holds one, it holds none)
        let adm = t.admit(ip("192.0.2.9"), ip("192.0.2.9"));
        assert!(adm.result.is_ok());
        assert_eq!(adm.evicted, vec![ip("192.0.2.0")]);
        // busy connections never give way: with all busy, a newcomer is refused
        for id in 1..=8 {
            t.busy(id);
        }
        let adm = t.admit(ip("192.0.2.10"), ip("192.0.2.10"));
        assert_eq!(adm.result, Err(Refused::Full(8)));
        assert!(adm.evicted.is_empty());
    }
}
