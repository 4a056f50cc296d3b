//! GSO/GRO packet sizes of an interface (BIG TCP) through rtnetlink: `RTM_GETLINK` reads
//! `IFLA_GSO_MAX_SIZE`, `IFLA_GRO_MAX_SIZE`, `IFLA_TSO_MAX_SIZE` and, on kernels ≥ 6.3, the IPv4
//! variants `IFLA_GSO_IPV4_MAX_SIZE` / `IFLA_GRO_IPV4_MAX_SIZE`; `RTM_NEWLINK` with those
//! attributes sets them (`ip link set dev IF gso_max_size N gro_max_size N`).
//!
//! The kernel does not expose these sizes in `/sys/class/net/IF/` on every release, so on a live
//! root they come from netlink (stored into a recording as `/wirespeed/link/IF/sizes.json`); a
//! captured tree is read from its `IF/gso_max_size`-style files, else from that answer file.
//!
//! A generic netlink socket asks the ethtool family for an interface's rings
//! (`ETHTOOL_MSG_RINGS_GET`), for the one thing the ioctl's ring struct lacks: whether the NIC
//! splits TCP headers from payload (`ETHTOOL_A_RINGS_TCP_DATA_SPLIT`, [`tcp_data_split`]).
//!
//! The same socket lists the host's addresses (`RTM_GETADDR` and `RTM_GETLINK` dumps,
//! [`addresses`]: what `getifaddrs(3)` gives, for telling a peer that is this host).
//!
//! The messages are built and parsed by pure functions ([`getlink_request`],
//! [`setlink_request`], [`parse_link_reply`], [`parse_ack`]) so their bytes are tested without
//! a kernel; [`get_sizes`] and [`set_sizes`] talk to the running kernel only (through the
//! calling thread's network namespace).

use crate::Root;
use serde::{Deserialize, Serialize};
use std::io;
use std::net::IpAddr;
use std::ops::ControlFlow;

/// The sizes the kernel reports for one interface: the four wirespeed can set, and the
/// driver's limit; `None` for an attribute it did not send (an older kernel).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkSizes {
    #[serde(flatten)]
    pub sizes: SizesSet,
    /// The driver's limit (read only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tso_max_size: Option<u32>,
}

/// The four GSO/GRO sizes of an interface: in a set wirespeed writes, `None` leaves one as it
/// is; in [`LinkSizes`], `None` is one the kernel did not report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizesSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso_max_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro_max_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso_ipv4_max_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro_ipv4_max_size: Option<u32>,
}

impl SizesSet {
    /// All four sizes at `n` (BIG TCP for IPv6 and IPv4).
    pub fn all(n: u32) -> SizesSet {
        SizesSet {
            gso_max_size: Some(n),
            gro_max_size: Some(n),
            gso_ipv4_max_size: Some(n),
            gro_ipv4_max_size: Some(n),
        }
    }

    fn fields(&self) -> [(&'static str, u16, Option<u32>); 4] {
        [
            ("gso_max_size", IFLA_GSO_MAX_SIZE, self.gso_max_size),
            ("gro_max_size", IFLA_GRO_MAX_SIZE, self.gro_max_size),
            (
                "gso_ipv4_max_size",
                IFLA_GSO_IPV4_MAX_SIZE,
                self.gso_ipv4_max_size,
            ),
            (
                "gro_ipv4_max_size",
                IFLA_GRO_IPV4_MAX_SIZE,
                self.gro_ipv4_max_size,
            ),
        ]
    }

    pub fn is_empty(&self) -> bool {
        self.fields().iter().all(|f| f.2.is_none())
    }

    /// This set without the sizes `cur` does not report (the kernel has no such attribute).
    pub fn supported_by(&self, cur: &LinkSizes) -> SizesSet {
        let cur = &cur.sizes;
        SizesSet {
            gso_max_size: self.gso_max_size.filter(|_| cur.gso_max_size.is_some()),
            gro_max_size: self.gro_max_size.filter(|_| cur.gro_max_size.is_some()),
            gso_ipv4_max_size: self
                .gso_ipv4_max_size
                .filter(|_| cur.gso_ipv4_max_size.is_some()),
            gro_ipv4_max_size: self
                .gro_ipv4_max_size
                .filter(|_| cur.gro_ipv4_max_size.is_some()),
        }
    }

    /// The values `cur` holds for the sizes this set names (what a journal saves).
    pub fn current_in(&self, cur: &LinkSizes) -> SizesSet {
        let cur = &cur.sizes;
        SizesSet {
            gso_max_size: self.gso_max_size.and(cur.gso_max_size),
            gro_max_size: self.gro_max_size.and(cur.gro_max_size),
            gso_ipv4_max_size: self.gso_ipv4_max_size.and(cur.gso_ipv4_max_size),
            gro_ipv4_max_size: self.gro_ipv4_max_size.and(cur.gro_ipv4_max_size),
        }
    }

    /// True when `cur` holds every size this set names.
    pub fn holds_in(&self, cur: &LinkSizes) -> bool {
        self.current_in(cur) == *self
    }

    /// The sizes as `ip link set` takes them: `gso_max_size 185000 gro_max_size 185000`.
    pub fn ip_args(&self) -> String {
        self.fields()
            .iter()
            .filter_map(|(name, _, v)| v.map(|v| format!("{name} {v}")))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

const NLMSG_HDRLEN: usize = 16;
const IFINFOMSG_LEN: usize = 16;
const NLMSG_ERROR: u16 = 2;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const IFLA_IFNAME: u16 = 3;
const IFLA_GSO_MAX_SIZE: u16 = 41;
const IFLA_GRO_MAX_SIZE: u16 = 58;
const IFLA_TSO_MAX_SIZE: u16 = 59;
const IFLA_GSO_IPV4_MAX_SIZE: u16 = 63;
const IFLA_GRO_IPV4_MAX_SIZE: u16 = 64;
const IFNAMSIZ: usize = 16;
const NLMSG_DONE: u16 = 3;
const RTM_NEWADDR: u16 = 20;
const RTM_GETADDR: u16 = 22;
/// `NLM_F_ROOT | NLM_F_MATCH`: every object of the kind.
const NLM_F_DUMP: u16 = 0x300;
const IFADDRMSG_LEN: usize = 8;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn check_name(iface: &str) -> io::Result<()> {
    let b = iface.as_bytes();
    if b.is_empty() || b.len() >= IFNAMSIZ || b.contains(&0) || b.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name {iface:?}"),
        ));
    }
    Ok(())
}

fn push_attr(buf: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let len = 4 + payload.len();
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(payload);
    buf.resize(align4(buf.len()), 0);
}

/// nlmsghdr + an empty `struct ifinfomsg` (family AF_UNSPEC, index 0: the kernel finds the
/// interface by its `IFLA_IFNAME`) + the name attribute.
fn link_message(kind: u16, flags: u16, seq: u32, iface: &str) -> io::Result<Vec<u8>> {
    check_name(iface)?;
    let mut buf = vec![0u8; NLMSG_HDRLEN + IFINFOMSG_LEN];
    buf[4..6].copy_from_slice(&kind.to_ne_bytes());
    buf[6..8].copy_from_slice(&flags.to_ne_bytes());
    buf[8..12].copy_from_slice(&seq.to_ne_bytes());
    let mut name = iface.as_bytes().to_vec();
    name.push(0);
    push_attr(&mut buf, IFLA_IFNAME, &name);
    Ok(buf)
}

fn finish(mut buf: Vec<u8>) -> Vec<u8> {
    let len = buf.len() as u32;
    buf[..4].copy_from_slice(&len.to_ne_bytes());
    buf
}

/// `RTM_GETLINK` for `iface` (by name).
pub fn getlink_request(seq: u32, iface: &str) -> io::Result<Vec<u8>> {
    Ok(finish(link_message(
        RTM_GETLINK,
        NLM_F_REQUEST,
        seq,
        iface,
    )?))
}

/// `RTM_NEWLINK` for `iface` (by name) carrying the sizes `set` names, asking for an ack.
pub fn setlink_request(seq: u32, iface: &str, set: &SizesSet) -> io::Result<Vec<u8>> {
    let mut buf = link_message(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, seq, iface)?;
    for (_, kind, v) in set.fields() {
        if let Some(v) = v {
            push_attr(&mut buf, kind, &v.to_ne_bytes());
        }
    }
    Ok(finish(buf))
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(o..o + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(o..o + 4)?.try_into().ok()?))
}

fn bad(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("malformed netlink reply: {what}"),
    )
}

/// Walk the messages of one datagram that answer request `seq`, handing each (type, payload)
/// to `f` until it breaks; an `NLMSG_ERROR` with a nonzero code is the kernel's errno (one with
/// code 0, an acknowledgement, is handed on like any message).
fn each_message<'a, T>(
    buf: &'a [u8],
    seq: u32,
    mut f: impl FnMut(u16, &'a [u8]) -> io::Result<ControlFlow<T>>,
) -> io::Result<Option<T>> {
    let mut o = 0;
    while o + NLMSG_HDRLEN <= buf.len() {
        let len = u32_at(buf, o).ok_or_else(|| bad("header"))? as usize;
        let kind = u16_at(buf, o + 4).ok_or_else(|| bad("header"))?;
        let mseq = u32_at(buf, o + 8).ok_or_else(|| bad("header"))?;
        if len < NLMSG_HDRLEN || o + len > buf.len() {
            return Err(bad("message length"));
        }
        let payload = &buf[o + NLMSG_HDRLEN..o + len];
        if mseq == seq {
            if kind == NLMSG_ERROR {
                let code = u32_at(payload, 0).ok_or_else(|| bad("error code"))? as i32;
                if code != 0 {
                    return Err(io::Error::from_raw_os_error(-code));
                }
            }
            if let ControlFlow::Break(t) = f(kind, payload)? {
                return Ok(Some(t));
            }
        }
        o += align4(len);
    }
    Ok(None)
}

/// What one datagram said about request `seq`: `Ok(Some(payload))` for a message of that
/// sequence number (type and payload), an error for an `NLMSG_ERROR` with a nonzero code, and
/// `Ok(None)` when it holds nothing for `seq`.
fn find_reply(buf: &[u8], seq: u32) -> io::Result<Option<(u16, &[u8])>> {
    each_message(buf, seq, |kind, payload| {
        Ok(ControlFlow::Break((kind, payload)))
    })
}

/// A message's attributes: type (without the nested/byte-order bits) and value.
type Attrs<'a> = Vec<(u16, &'a [u8])>;

/// The attributes of a message body.
fn attrs(body: &[u8]) -> io::Result<Attrs<'_>> {
    let mut out = Vec::new();
    let mut o = 0;
    while o + 4 <= body.len() {
        let len = u16_at(body, o).ok_or_else(|| bad("attribute"))? as usize;
        let kind = u16_at(body, o + 2).ok_or_else(|| bad("attribute"))? & 0x3fff;
        if len < 4 || o + len > body.len() {
            return Err(bad("attribute length"));
        }
        out.push((kind, &body[o + 4..o + len]));
        o += align4(len);
    }
    Ok(out)
}

/// The sizes in the `RTM_NEWLINK` answer to a `RTM_GETLINK` of sequence `seq` (`Ok(None)`: the
/// datagram holds no answer to it).
pub fn parse_link_reply(buf: &[u8], seq: u32) -> io::Result<Option<LinkSizes>> {
    let Some((kind, payload)) = find_reply(buf, seq)? else {
        return Ok(None);
    };
    if kind != RTM_NEWLINK {
        return Err(bad("not a link message"));
    }
    if payload.len() < IFINFOMSG_LEN {
        return Err(bad("short ifinfomsg"));
    }
    let mut s = LinkSizes::default();
    for (kind, value) in attrs(&payload[IFINFOMSG_LEN..])? {
        let v = if value.len() == 4 {
            u32_at(value, 0)
        } else {
            None
        };
        match kind {
            IFLA_GSO_MAX_SIZE => s.sizes.gso_max_size = v,
            IFLA_GRO_MAX_SIZE => s.sizes.gro_max_size = v,
            IFLA_GSO_IPV4_MAX_SIZE => s.sizes.gso_ipv4_max_size = v,
            IFLA_GRO_IPV4_MAX_SIZE => s.sizes.gro_ipv4_max_size = v,
            IFLA_TSO_MAX_SIZE => s.tso_max_size = v,
            _ => {}
        }
    }
    Ok(Some(s))
}

/// The ack of request `seq`: `Ok(Some(()))` for success, the kernel's errno as an error,
/// `Ok(None)` when the datagram holds no answer to it.
pub fn parse_ack(buf: &[u8], seq: u32) -> io::Result<Option<()>> {
    match find_reply(buf, seq)? {
        Some((NLMSG_ERROR, _)) => Ok(Some(())),
        Some(_) => Err(bad("expected an ack")),
        None => Ok(None),
    }
}

/// A dump request (`NLM_F_DUMP`) of message type `kind` whose body is `body_len` zero bytes
/// (family `AF_UNSPEC`: every family).
fn dump_request(kind: u16, seq: u32, body_len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; NLMSG_HDRLEN + body_len];
    buf[4..6].copy_from_slice(&kind.to_ne_bytes());
    buf[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    buf[8..12].copy_from_slice(&seq.to_ne_bytes());
    finish(buf)
}

/// `RTM_GETADDR` dump: every address of every interface (`ip addr show`).
pub fn getaddr_dump_request(seq: u32) -> Vec<u8> {
    dump_request(RTM_GETADDR, seq, IFADDRMSG_LEN)
}

/// `RTM_GETLINK` dump: every interface, for the index → name map.
pub fn getlink_dump_request(seq: u32) -> Vec<u8> {
    dump_request(RTM_GETLINK, seq, IFINFOMSG_LEN)
}

/// Hand each message of dump `seq` in one datagram to `each` (type, payload); `Ok(true)` once
/// the dump's `NLMSG_DONE` is in it, the kernel's errno for an `NLMSG_ERROR`.
pub fn parse_dump(
    buf: &[u8],
    seq: u32,
    mut each: impl FnMut(u16, &[u8]) -> io::Result<()>,
) -> io::Result<bool> {
    let done = each_message(buf, seq, |kind, payload| {
        Ok(match kind {
            NLMSG_DONE => ControlFlow::Break(()),
            NLMSG_ERROR => ControlFlow::Continue(()),
            _ => {
                each(kind, payload)?;
                ControlFlow::Continue(())
            }
        })
    })?;
    Ok(done.is_some())
}

/// The interface index and address of one `RTM_NEWADDR` payload: the local address
/// (`IFA_LOCAL`, which differs from `IFA_ADDRESS` on a point-to-point link), else
/// `IFA_ADDRESS`. `None` for a family other than IPv4/IPv6 or a message without an address.
pub fn parse_addr(payload: &[u8]) -> io::Result<Option<(u32, IpAddr)>> {
    if payload.len() < IFADDRMSG_LEN {
        return Err(bad("short ifaddrmsg"));
    }
    let family = payload[0];
    let index = u32_at(payload, 4).ok_or_else(|| bad("ifaddrmsg"))?;
    let ip = |v: &[u8]| -> Option<IpAddr> {
        match family {
            AF_INET => <[u8; 4]>::try_from(v).ok().map(IpAddr::from),
            AF_INET6 => <[u8; 16]>::try_from(v).ok().map(IpAddr::from),
            _ => None,
        }
    };
    let (mut local, mut address) = (None, None);
    for (kind, value) in attrs(&payload[IFADDRMSG_LEN..])? {
        match kind {
            IFA_LOCAL => local = ip(value),
            IFA_ADDRESS => address = ip(value),
            _ => {}
        }
    }
    Ok(local.or(address).map(|a| (index, a)))
}

/// The interface index and name of one `RTM_NEWLINK` payload (`None` without a name).
pub fn parse_link_name(payload: &[u8]) -> io::Result<Option<(u32, String)>> {
    if payload.len() < IFINFOMSG_LEN {
        return Err(bad("short ifinfomsg"));
    }
    let index = u32_at(payload, 4).ok_or_else(|| bad("ifinfomsg"))?;
    for (kind, value) in attrs(&payload[IFINFOMSG_LEN..])? {
        if kind == IFLA_IFNAME {
            let name = value.split(|&b| b == 0).next().unwrap_or_default();
            return Ok(Some((index, String::from_utf8_lossy(name).into_owned())));
        }
    }
    Ok(None)
}

/// Every address of the running kernel's interfaces with the interface's name, as
/// `getifaddrs(3)` lists them (through the calling thread's network namespace).
pub fn addresses() -> io::Result<Vec<(String, IpAddr)>> {
    let s = sys::Sock::open()?;
    let mut names = std::collections::BTreeMap::new();
    s.send(&getlink_dump_request(3))?;
    s.dump(|buf| {
        parse_dump(buf, 3, |kind, payload| {
            if kind == RTM_NEWLINK {
                names.extend(parse_link_name(payload)?);
            }
            Ok(())
        })
    })?;
    let mut out = Vec::new();
    s.send(&getaddr_dump_request(4))?;
    s.dump(|buf| {
        parse_dump(buf, 4, |kind, payload| {
            if kind == RTM_NEWADDR {
                if let Some((index, addr)) = parse_addr(payload)? {
                    if let Some(name) = names.get(&index) {
                        out.push((String::clone(name), addr));
                    }
                }
            }
            Ok(())
        })
    })?;
    Ok(out)
}

/// The sizes of `iface` as the running kernel reports them (`ip -d link show IF`).
pub fn get_sizes(iface: &str) -> io::Result<LinkSizes> {
    let s = sys::Sock::open()?;
    let seq = 1;
    s.send(&getlink_request(seq, iface)?)?;
    s.answer(|buf| parse_link_reply(buf, seq))
}

/// Set the sizes `set` names (`ip link set dev IF gso_max_size N ...`). The kernel refuses a
/// size above the driver's `tso_max_size` with `EINVAL`.
pub fn set_sizes(iface: &str, set: &SizesSet) -> io::Result<()> {
    if set.is_empty() {
        return Ok(());
    }
    let s = sys::Sock::open()?;
    let seq = 2;
    s.send(&setlink_request(seq, iface, set)?)?;
    s.answer(|buf| parse_ack(buf, seq))
}

/// `GENL_ID_CTRL`: the generic netlink controller, which names families' ids.
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const GENLMSG_LEN: usize = 4;
const ETHTOOL_MSG_RINGS_GET: u8 = 15;
const ETHTOOL_A_RINGS_HEADER: u16 = 1;
const ETHTOOL_A_RINGS_TCP_DATA_SPLIT: u16 = 11;
const ETHTOOL_A_HEADER_DEV_NAME: u16 = 2;
const NLA_F_NESTED: u16 = 0x8000;

/// nlmsghdr (type `family`) + genlmsghdr (`cmd`, version 1) + `attrs` (already encoded).
fn genl_message(family: u16, cmd: u8, seq: u32, attrs: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; NLMSG_HDRLEN];
    buf[4..6].copy_from_slice(&family.to_ne_bytes());
    buf[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    buf[8..12].copy_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&[cmd, 1, 0, 0]);
    buf.extend_from_slice(attrs);
    finish(buf)
}

/// `CTRL_CMD_GETFAMILY` for the family `name` (`"ethtool"`).
pub fn getfamily_request(seq: u32, name: &str) -> Vec<u8> {
    let mut a = Vec::new();
    let mut n = name.as_bytes().to_vec();
    n.push(0);
    push_attr(&mut a, CTRL_ATTR_FAMILY_NAME, &n);
    genl_message(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, seq, &a)
}

/// The attributes of the generic-netlink answer to request `seq` (after its `genlmsghdr`);
/// `None` when `buf` holds no answer to it.
fn genl_reply_attrs(buf: &[u8], seq: u32) -> io::Result<Option<Attrs<'_>>> {
    let Some((_, payload)) = find_reply(buf, seq)? else {
        return Ok(None);
    };
    let body = payload
        .get(GENLMSG_LEN..)
        .ok_or_else(|| bad("short genlmsghdr"))?;
    attrs(body).map(Some)
}

/// The family id in the controller's answer to request `seq`.
pub fn parse_family_id(buf: &[u8], seq: u32) -> io::Result<Option<u16>> {
    let Some(attrs) = genl_reply_attrs(buf, seq)? else {
        return Ok(None);
    };
    for (kind, value) in attrs {
        if kind == CTRL_ATTR_FAMILY_ID {
            return u16_at(value, 0).map(Some).ok_or_else(|| bad("family id"));
        }
    }
    Err(bad("no family id"))
}

/// `ETHTOOL_MSG_RINGS_GET` for `iface` to the ethtool family `family`.
pub fn rings_request(family: u16, seq: u32, iface: &str) -> io::Result<Vec<u8>> {
    check_name(iface)?;
    let mut name = iface.as_bytes().to_vec();
    name.push(0);
    let mut header = Vec::new();
    push_attr(&mut header, ETHTOOL_A_HEADER_DEV_NAME, &name);
    let mut a = Vec::new();
    push_attr(&mut a, ETHTOOL_A_RINGS_HEADER | NLA_F_NESTED, &header);
    Ok(genl_message(family, ETHTOOL_MSG_RINGS_GET, seq, &a))
}

/// `ETHTOOL_A_RINGS_TCP_DATA_SPLIT` in the answer to request `seq`: `Some(None)` when the
/// answer lacks it (a kernel before 6.0 or a driver that does not say), else its value
/// (0 unknown, 1 disabled, 2 enabled).
pub fn parse_tcp_data_split(buf: &[u8], seq: u32) -> io::Result<Option<Option<u8>>> {
    let Some(attrs) = genl_reply_attrs(buf, seq)? else {
        return Ok(None);
    };
    for (kind, value) in attrs {
        if kind == ETHTOOL_A_RINGS_TCP_DATA_SPLIT {
            return Ok(Some(value.first().copied()));
        }
    }
    Ok(Some(None))
}

/// Whether the running kernel says `iface` splits TCP headers from payload (`ethtool -g IF`'s
/// `TCP data split`): the raw value (0 unknown, 1 off, 2 on), `None` when not reported.
pub fn tcp_data_split(iface: &str) -> io::Result<Option<u8>> {
    let s = sys::Sock::open_generic()?;
    s.send(&getfamily_request(1, "ethtool"))?;
    let family = s.answer(|buf| parse_family_id(buf, 1))?;
    s.send(&rings_request(family, 2, iface)?)?;
    s.answer(|buf| parse_tcp_data_split(buf, 2))
}

/// Where a recording root stores the answer, and a captured tree may carry it.
pub fn snapshot_path(iface: &str) -> String {
    format!("/wirespeed/link/{iface}/sizes.json")
}

/// The sizes of `iface`: netlink on a live root (stored into the recording when the root
/// records); in any other root the `/sys/class/net/IF/{gso,gro,tso}_max_size`-style files, else
/// the answer file of a snapshot. `None` when nothing is known.
pub fn collect_sizes(root: &Root, iface: &str) -> Option<LinkSizes> {
    if check_name(iface).is_err() {
        return None;
    }
    if root.is_live() {
        let s = get_sizes(iface).ok()?;
        if let Ok(bytes) = serde_json::to_vec_pretty(&s) {
            root.record_synthetic(&snapshot_path(iface), &bytes);
        }
        return Some(s);
    }
    let net = format!("/sys/class/net/{iface}");
    let files = LinkSizes {
        sizes: SizesSet {
            gso_max_size: root.parse_opt(&format!("{net}/gso_max_size")),
            gro_max_size: root.parse_opt(&format!("{net}/gro_max_size")),
            gso_ipv4_max_size: root.parse_opt(&format!("{net}/gso_ipv4_max_size")),
            gro_ipv4_max_size: root.parse_opt(&format!("{net}/gro_ipv4_max_size")),
        },
        tso_max_size: root.parse_opt(&format!("{net}/tso_max_size")),
    };
    if files != LinkSizes::default() {
        return Some(files);
    }
    serde_json::from_str(&root.read(&snapshot_path(iface)).ok()?).ok()
}

/// The socket side.
mod sys {
    use rustix::net::{
        recv, sendto, socket_with, sockopt, AddressFamily, RecvFlags, SendFlags, SocketFlags,
        SocketType,
    };
    use std::io;
    use std::os::fd::OwnedFd;
    use std::time::Duration;

    /// Replies larger than this are cut (a link message with every attribute is a few KiB).
    const RECV: usize = 64 * 1024;
    /// Datagrams read before giving up on an answer that never comes.
    const MAX_DATAGRAMS: usize = 64;
    /// Datagrams of one dump (each holds many messages) before giving up on its end.
    const MAX_DUMP_DATAGRAMS: usize = 65536;

    pub(super) struct Sock {
        fd: OwnedFd,
    }

    impl Sock {
        pub(super) fn open() -> io::Result<Sock> {
            // protocol `None` is NETLINK_ROUTE
            Sock::open_protocol(None)
        }

        /// A generic netlink socket (NETLINK_GENERIC: the ethtool family).
        pub(super) fn open_generic() -> io::Result<Sock> {
            Sock::open_protocol(Some(rustix::net::netlink::GENERIC))
        }

        fn open_protocol(protocol: Option<rustix::net::Protocol>) -> io::Result<Sock> {
            let fd = socket_with(
                AddressFamily::NETLINK,
                SocketType::RAW,
                SocketFlags::CLOEXEC,
                protocol,
            )?;
            // the kernel answers a request at once; a bound on the wait keeps a lost answer
            // from hanging the caller
            sockopt::set_socket_timeout(&fd, sockopt::Timeout::Recv, Some(Duration::from_secs(5)))?;
            Ok(Sock { fd })
        }

        pub(super) fn send(&self, msg: &[u8]) -> io::Result<()> {
            // port 0 addresses the kernel
            let kernel = rustix::net::netlink::SocketAddrNetlink::new(0, 0);
            sendto(&self.fd, msg, SendFlags::empty(), &kernel)?;
            Ok(())
        }

        /// One datagram into `buf`: its length, `None` when a signal interrupted the wait.
        fn datagram(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
            let n = match recv(&self.fd, &mut buf[..], RecvFlags::TRUNC) {
                Ok((_, n)) => n,
                Err(rustix::io::Errno::INTR) => return Ok(None),
                Err(e) => return Err(e.into()),
            };
            if n > buf.len() {
                return Err(io::Error::other("netlink reply larger than 64 KiB"));
            }
            Ok(Some(n))
        }

        /// Read datagrams until `parse` finds the answer in one.
        pub(super) fn answer<T>(
            &self,
            mut parse: impl FnMut(&[u8]) -> io::Result<Option<T>>,
        ) -> io::Result<T> {
            let mut buf = vec![0u8; RECV];
            for _ in 0..MAX_DATAGRAMS {
                let Some(n) = self.datagram(&mut buf)? else {
                    continue;
                };
                if let Some(v) = parse(&buf[..n])? {
                    return Ok(v);
                }
            }
            Err(io::Error::other("no netlink answer"))
        }

        /// Read the datagrams of a dump until `parse` says it is done (`Ok(true)`).
        pub(super) fn dump(
            &self,
            mut parse: impl FnMut(&[u8]) -> io::Result<bool>,
        ) -> io::Result<()> {
            let mut buf = vec![0u8; RECV];
            for _ in 0..MAX_DUMP_DATAGRAMS {
                let Some(n) = self.datagram(&mut buf)? else {
                    continue;
                };
                if parse(&buf[..n])? {
                    return Ok(());
                }
            }
            Err(io::Error::other("netlink dump did not end"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A genetlink answer: nlmsghdr + genlmsghdr + `attrs`.
    fn genl_reply(kind: u16, seq: u32, attrs: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; NLMSG_HDRLEN];
        b[4..6].copy_from_slice(&kind.to_ne_bytes());
        b[8..12].copy_from_slice(&seq.to_ne_bytes());
        b.extend_from_slice(&[1, 1, 0, 0]);
        b.extend_from_slice(attrs);
        finish(b)
    }

    #[test]
    fn ethtool_rings_request_and_tcp_data_split_answer() {
        let req = getfamily_request(1, "ethtool");
        assert_eq!(u16_at(&req, 4), Some(GENL_ID_CTRL));
        assert_eq!(req[NLMSG_HDRLEN], CTRL_CMD_GETFAMILY);
        assert!(req.windows(8).any(|w| w == b"ethtool\0"));
        let mut a = Vec::new();
        push_attr(&mut a, CTRL_ATTR_FAMILY_ID, &21u16.to_ne_bytes());
        assert_eq!(
            parse_family_id(&genl_reply(GENL_ID_CTRL, 1, &a), 1).ok(),
            Some(Some(21))
        );
        assert_eq!(
            parse_family_id(&genl_reply(GENL_ID_CTRL, 1, &a), 9).ok(),
            Some(None)
        );

        let req = rings_request(21, 2, "eth0").expect("request");
        assert_eq!(u16_at(&req, 4), Some(21));
        assert_eq!(req[NLMSG_HDRLEN], ETHTOOL_MSG_RINGS_GET);
        assert_eq!(
            u16_at(&req, NLMSG_HDRLEN + 6),
            Some(ETHTOOL_A_RINGS_HEADER | NLA_F_NESTED)
        );
        assert!(req.windows(5).any(|w| w == b"eth0\0"));
        assert!(rings_request(21, 2, "a/b").is_err());

        let mut a = Vec::new();
        push_attr(&mut a, 6, &4096u32.to_ne_bytes()); // ETHTOOL_A_RINGS_RX
        push_attr(&mut a, ETHTOOL_A_RINGS_TCP_DATA_SPLIT, &[2]);
        assert_eq!(
            parse_tcp_data_split(&genl_reply(21, 2, &a), 2).ok(),
            Some(Some(Some(2)))
        );
        let mut a = Vec::new();
        push_attr(&mut a, 6, &4096u32.to_ne_bytes());
        assert_eq!(
            parse_tcp_data_split(&genl_reply(21, 2, &a), 2).ok(),
            Some(Some(None))
        );
        // a truncated answer is an error, not a panic
        assert!(parse_tcp_data_split(&genl_reply(21, 2, &[8, 0, 11, 0, 2, 0]), 2).is_err());
    }

    #[test]
    fn live_tcp_data_split_answers_or_is_refused() {
        // Whatever the host's NIC says (or an error: no ethtool netlink, no rings): no panic.
        let _ = tcp_data_split("lo");
        println!("eth0 tcp-data-split: {:?}", tcp_data_split("eth0"));
    }

    fn words(b: &[u8]) -> (u32, u16, u16, u32) {
        (
            u32_at(b, 0).unwrap(),
            u16_at(b, 4).unwrap(),
            u16_at(b, 6).unwrap(),
            u32_at(b, 8).unwrap(),
        )
    }

    #[test]
    fn getlink_request_bytes() {
        let m = getlink_request(7, "eth0").unwrap();
        // 16 header + 16 ifinfomsg + attr (4 + "eth0\0" = 9, padded to 12)
        assert_eq!(m.len(), 44);
        assert_eq!(words(&m), (44, RTM_GETLINK, NLM_F_REQUEST, 7));
        assert!(m[16..32].iter().all(|&b| b == 0), "AF_UNSPEC, index 0");
        assert_eq!(u16_at(&m, 32), Some(9));
        assert_eq!(u16_at(&m, 34), Some(IFLA_IFNAME));
        assert_eq!(&m[36..41], b"eth0\0");
        assert_eq!(&m[41..44], &[0, 0, 0]);
    }

    #[test]
    fn setlink_request_carries_exactly_the_named_sizes() {
        let set = SizesSet {
            gso_max_size: Some(185_000),
            gro_ipv4_max_size: Some(131_072),
            ..SizesSet::default()
        };
        let m = setlink_request(3, "ens1f0np0", &set).unwrap();
        // name attr: 4 + 10 = 14 → 16; two u32 attrs of 8
        assert_eq!(m.len(), 16 + 16 + 16 + 8 + 8);
        assert_eq!(words(&m), (64, RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, 3));
        assert_eq!(&m[36..46], b"ens1f0np0\0");
        assert_eq!(
            (u16_at(&m, 48), u16_at(&m, 50), u32_at(&m, 52)),
            (Some(8), Some(IFLA_GSO_MAX_SIZE), Some(185_000))
        );
        assert_eq!(
            (u16_at(&m, 56), u16_at(&m, 58), u32_at(&m, 60)),
            (Some(8), Some(IFLA_GRO_IPV4_MAX_SIZE), Some(131_072))
        );
        assert_eq!(
            set.ip_args(),
            "gso_max_size 185000 gro_ipv4_max_size 131072"
        );
    }

    #[test]
    fn bad_names_are_refused_before_any_socket() {
        for n in ["", "a-name-far-too-long-for-ifnamsiz", "a/b", "a\0b"] {
            assert!(getlink_request(1, n).is_err(), "{n:?}");
            assert!(get_sizes(n).is_err(), "{n:?}");
        }
    }

    /// A reply as the kernel builds it: header, ifinfomsg, attributes.
    fn reply(seq: u32, attrs: &[(u16, &[u8])]) -> Vec<u8> {
        let mut b = vec![0u8; NLMSG_HDRLEN + IFINFOMSG_LEN];
        b[4..6].copy_from_slice(&RTM_NEWLINK.to_ne_bytes());
        b[8..12].copy_from_slice(&seq.to_ne_bytes());
        for (k, p) in attrs {
            push_attr(&mut b, *k, p);
        }
        finish(b)
    }

    #[test]
    fn link_reply_sizes_and_absent_attributes() {
        let b = reply(
            5,
            &[
                (IFLA_IFNAME, b"eth0\0"),
                (IFLA_GSO_MAX_SIZE, &65_536u32.to_ne_bytes()),
                (IFLA_GRO_MAX_SIZE, &185_000u32.to_ne_bytes()),
                (IFLA_TSO_MAX_SIZE, &524_280u32.to_ne_bytes()),
                // a nested attribute (NLA_F_NESTED) of another kind is skipped
                (26 | 0x8000, &[0; 12]),
            ],
        );
        let s = parse_link_reply(&b, 5).unwrap().unwrap();
        assert_eq!(
            s,
            LinkSizes {
                sizes: SizesSet {
                    gso_max_size: Some(65_536),
                    gro_max_size: Some(185_000),
                    gso_ipv4_max_size: None,
                    gro_ipv4_max_size: None,
                },
                tso_max_size: Some(524_280),
            }
        );
        // another sequence number: no answer in it
        assert_eq!(parse_link_reply(&b, 6).unwrap(), None);
        // the IPv4 sizes are dropped from a set when the kernel has none
        let set = SizesSet::all(185_000).supported_by(&s);
        assert_eq!(set.ip_args(), "gso_max_size 185000 gro_max_size 185000");
        assert_eq!(
            set.current_in(&s),
            SizesSet {
                gso_max_size: Some(65_536),
                gro_max_size: Some(185_000),
                ..SizesSet::default()
            }
        );
        assert!(!set.holds_in(&s));
    }

    #[test]
    fn errors_and_hostile_replies() {
        // NLMSG_ERROR with -EINVAL for seq 9
        let mut e = vec![0u8; NLMSG_HDRLEN + 4];
        e[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        e[8..12].copy_from_slice(&9u32.to_ne_bytes());
        e[16..20].copy_from_slice(&(-rustix::io::Errno::INVAL.raw_os_error()).to_ne_bytes());
        let e = finish(e);
        assert_eq!(
            parse_ack(&e, 9).unwrap_err().raw_os_error(),
            Some(rustix::io::Errno::INVAL.raw_os_error())
        );
        assert_eq!(
            parse_link_reply(&e, 9).unwrap_err().raw_os_error(),
            Some(rustix::io::Errno::INVAL.raw_os_error())
        );
        // an ack (code 0)
        let mut ok = e.clone();
        ok[16..20].copy_from_slice(&0i32.to_ne_bytes());
        assert_eq!(parse_ack(&ok, 9).unwrap(), Some(()));
        // lengths that lie
        let mut b = reply(1, &[(IFLA_GSO_MAX_SIZE, &1u32.to_ne_bytes())]);
        b[0..4].copy_from_slice(&4096u32.to_ne_bytes());
        assert!(parse_link_reply(&b, 1).is_err());
        let mut b = reply(1, &[(IFLA_GSO_MAX_SIZE, &1u32.to_ne_bytes())]);
        b[32..34].copy_from_slice(&200u16.to_ne_bytes());
        assert!(parse_link_reply(&b, 1).is_err());
        let mut b = reply(1, &[]);
        b[0..4].copy_from_slice(&3u32.to_ne_bytes());
        assert!(parse_link_reply(&b, 1).is_err());
        // a size attribute of the wrong width is not a size
        let b = reply(1, &[(IFLA_GSO_MAX_SIZE, &[1, 2])]);
        assert_eq!(
            parse_link_reply(&b, 1).unwrap().unwrap().sizes.gso_max_size,
            None
        );
        assert_eq!(parse_link_reply(&[], 1).unwrap(), None);
    }

    #[test]
    fn live_lo_answers() {
        match get_sizes("lo") {
            Ok(s) => {
                eprintln!("lo: {s:?}");
                assert!(s.sizes.gso_max_size.is_some(), "{s:?}");
                if let (Some(g), Some(t)) = (s.sizes.gso_max_size, s.tso_max_size) {
                    assert!(g <= t, "{s:?}");
                }
            }
            Err(e) => eprintln!("SKIP: RTM_GETLINK lo: {e}"),
        }
    }

    /// One netlink message of type `kind` and sequence `seq` with `body` then `attrs`.
    fn message(kind: u16, seq: u32, body: &[u8], attrs: &[(u16, &[u8])]) -> Vec<u8> {
        let mut b = vec![0u8; NLMSG_HDRLEN];
        b[4..6].copy_from_slice(&kind.to_ne_bytes());
        b[8..12].copy_from_slice(&seq.to_ne_bytes());
        b.extend_from_slice(body);
        for (k, p) in attrs {
            push_attr(&mut b, *k, p);
        }
        finish(b)
    }

    fn ifaddrmsg(family: u8, index: u32) -> Vec<u8> {
        let mut m = vec![family, 24, 0, 0];
        m.extend_from_slice(&index.to_ne_bytes());
        m
    }

    #[test]
    fn dump_requests_bytes() {
        let b = getaddr_dump_request(7);
        assert_eq!(b.len(), NLMSG_HDRLEN + IFADDRMSG_LEN);
        assert_eq!(words(&b), (24, RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 7));
        assert!(
            b[NLMSG_HDRLEN..].iter().all(|&x| x == 0),
            "AF_UNSPEC, every interface"
        );
        let b = getlink_dump_request(8);
        assert_eq!(words(&b), (32, RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 8));
    }

    #[test]
    fn address_dump_local_before_peer_names_by_index() {
        // a point-to-point IPv4 address: IFA_ADDRESS is the peer, IFA_LOCAL ours
        let mut dg = message(
            RTM_NEWADDR,
            4,
            &ifaddrmsg(AF_INET, 3),
            &[(IFA_ADDRESS, &[10, 0, 0, 2]), (IFA_LOCAL, &[10, 0, 0, 1])],
        );
        let v6: [u8; 16] = "fd00::5".parse::<std::net::Ipv6Addr>().unwrap().octets();
        dg.extend(message(
            RTM_NEWADDR,
            4,
            &ifaddrmsg(AF_INET6, 1),
            &[(IFA_ADDRESS, &v6)],
        ));
        // another request's message and an unknown family are passed over
        dg.extend(message(
            RTM_NEWADDR,
            9,
            &ifaddrmsg(AF_INET, 5),
            &[(IFA_LOCAL, &[1, 1, 1, 1])],
        ));
        dg.extend(message(
            RTM_NEWADDR,
            4,
            &ifaddrmsg(17, 6),
            &[(IFA_ADDRESS, &[0; 6])],
        ));
        let mut got = Vec::new();
        let done = parse_dump(&dg, 4, |kind, p| {
            assert_eq!(kind, RTM_NEWADDR);
            got.extend(parse_addr(p)?);
            Ok(())
        })
        .unwrap();
        assert!(!done, "no NLMSG_DONE yet");
        assert_eq!(
            got,
            vec![
                (3, IpAddr::from([10, 0, 0, 1])),
                (1, "fd00::5".parse().unwrap())
            ]
        );
        assert!(parse_dump(&message(NLMSG_DONE, 4, &[0; 4], &[]), 4, |_, _| Ok(())).unwrap());

        let mut body = vec![0u8; IFINFOMSG_LEN];
        body[4..8].copy_from_slice(&3u32.to_ne_bytes());
        let m = message(RTM_NEWLINK, 3, &body, &[(IFLA_IFNAME, b"veth0\0")]);
        assert_eq!(
            parse_link_name(&m[NLMSG_HDRLEN..]).unwrap(),
            Some((3, "veth0".to_string()))
        );
    }

    #[test]
    fn hostile_dumps_are_errors() {
        let mut e = message(NLMSG_ERROR, 4, &[0; 20], &[]);
        e[16..20].copy_from_slice(&(-1i32).to_ne_bytes());
        assert_eq!(
            parse_dump(&e, 4, |_, _| Ok(())).unwrap_err().raw_os_error(),
            Some(1)
        );
        let mut m = message(RTM_NEWADDR, 4, &ifaddrmsg(AF_INET, 1), &[]);
        m[0..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert!(parse_dump(&m, 4, |_, _| Ok(())).is_err());
        assert!(parse_addr(&[2, 0, 0]).is_err());
        let mut a = ifaddrmsg(AF_INET, 1);
        a.extend_from_slice(&[200, 0, 1, 0]);
        assert!(parse_addr(&a).is_err(), "attribute longer than the message");
        assert_eq!(
            parse_addr(&[ifaddrmsg(AF_INET, 1), vec![5, 0, 1, 0, 9, 0, 0, 0]].concat()).unwrap(),
            None,
            "a 1-byte address is no address"
        );
    }

    #[test]
    fn live_addresses_hold_loopback() {
        // reading addresses needs no privilege: no skip
        let a = addresses().expect("RTM_GETADDR dump");
        assert!(
            a.iter()
                .any(|(i, ip)| i == "lo" && *ip == IpAddr::from([127, 0, 0, 1])),
            "{a:?}"
        );
    }

    /// A recording's `sizes.json`: the four sizes and the driver's limit at one level, in this
    /// order, an absent one left out; what an earlier build wrote still reads.
    #[test]
    fn sizes_json_is_flat() {
        let s = LinkSizes {
            sizes: SizesSet {
                gso_max_size: Some(65_536),
                gro_ipv4_max_size: Some(185_000),
                ..SizesSet::default()
            },
            tso_max_size: Some(524_280),
        };
        let text = r#"{"gso_max_size":65536,"gro_ipv4_max_size":185000,"tso_max_size":524280}"#;
        assert_eq!(serde_json::to_string(&s).unwrap(), text);
        assert_eq!(serde_json::from_str::<LinkSizes>(text).unwrap(), s);
        assert_eq!(serde_json::to_string(&LinkSizes::default()).unwrap(), "{}");
        assert_eq!(
            serde_json::from_str::<LinkSizes>("{}").unwrap(),
            LinkSizes::default()
        );
    }

    #[test]
    fn tree_files_then_answer_file() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        assert_eq!(collect_sizes(&root, "eth0"), None);
        let d = t.path().join("wirespeed/link/eth0");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("sizes.json"), r#"{"gso_max_size":65536}"#).unwrap();
        assert_eq!(
            collect_sizes(&root, "eth0").unwrap().sizes.gso_max_size,
            Some(65_536)
        );
        let n = t.path().join("sys/class/net/eth0");
        std::fs::create_dir_all(&n).unwrap();
        std::fs::write(n.join("gso_max_size"), "185000\n").unwrap();
        std::fs::write(n.join("tso_max_size"), "524280\n").unwrap();
        let s = collect_sizes(&root, "eth0").unwrap();
        assert_eq!(
            (s.sizes.gso_max_size, s.tso_max_size, s.sizes.gro_max_size),
            (Some(185_000), Some(524_280), None)
        );
    }
}
