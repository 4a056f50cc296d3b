//! GSO/GRO packet sizes of an interface (BIG TCP) through rtnetlink: `RTM_GETLINK` reads
//! `IFLA_GSO_MAX_SIZE`, `IFLA_GRO_MAX_SIZE`, `IFLA_TSO_MAX_SIZE` and, on kernels ≥ 6.3, the IPv4
//! variants `IFLA_GSO_IPV4_MAX_SIZE` / `IFLA_GRO_IPV4_MAX_SIZE`; `RTM_NEWLINK` with those
//! attributes sets them (`ip link set dev IF gso_max_size N gro_max_size N`).
//!
//! The kernel does not expose these sizes in `/sys/class/net/IF/` on every release, so on a live
//! root they come from netlink (stored into a recording as `/wirespeed/link/IF/sizes.json`); a
//! captured tree is read from its `IF/gso_max_size`-style files, else from that answer file.
//!
//! The messages are built and parsed by pure functions ([`getlink_request`],
//! [`setlink_request`], [`parse_link_reply`], [`parse_ack`]) so their bytes are tested without
//! a kernel; [`get_sizes`] and [`set_sizes`] talk to the running kernel only (through the
//! calling thread's network namespace).

use crate::Root;
use serde::{Deserialize, Serialize};
use std::io;

/// The sizes the kernel reports for one interface; `None` for an attribute it did not send
/// (an older kernel).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkSizes {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso_max_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro_max_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso_ipv4_max_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro_ipv4_max_size: Option<u32>,
    /// The driver's limit (read only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tso_max_size: Option<u32>,
}

/// The sizes wirespeed sets; `None` leaves one as it is.
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

/// What one datagram said about request `seq`: `Ok(Some(payload))` for a message of that
/// sequence number (type and payload), an error for an `NLMSG_ERROR` with a nonzero code, and
/// `Ok(None)` when it holds nothing for `seq`.
fn find_reply(buf: &[u8], seq: u32) -> io::Result<Option<(u16, &[u8])>> {
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
            return Ok(Some((kind, payload)));
        }
        o += align4(len);
    }
    Ok(None)
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
    let mut s = LinkSizes::default();
    let mut o = IFINFOMSG_LEN;
    if payload.len() < o {
        return Err(bad("short ifinfomsg"));
    }
    while o + 4 <= payload.len() {
        let len = u16_at(payload, o).ok_or_else(|| bad("attribute"))? as usize;
        let kind = u16_at(payload, o + 2).ok_or_else(|| bad("attribute"))? & 0x3fff;
        if len < 4 || o + len > payload.len() {
            return Err(bad("attribute length"));
        }
        let v = if len == 8 {
            u32_at(payload, o + 4)
        } else {
            None
        };
        match kind {
            IFLA_GSO_MAX_SIZE => s.gso_max_size = v,
            IFLA_GRO_MAX_SIZE => s.gro_max_size = v,
            IFLA_GSO_IPV4_MAX_SIZE => s.gso_ipv4_max_size = v,
            IFLA_GRO_IPV4_MAX_SIZE => s.gro_ipv4_max_size = v,
            IFLA_TSO_MAX_SIZE => s.tso_max_size = v,
            _ => {}
        }
        o += align4(len);
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
        gso_max_size: root.parse_opt(&format!("{net}/gso_max_size")),
        gro_max_size: root.parse_opt(&format!("{net}/gro_max_size")),
        gso_ipv4_max_size: root.parse_opt(&format!("{net}/gso_ipv4_max_size")),
        gro_ipv4_max_size: root.parse_opt(&format!("{net}/gro_ipv4_max_size")),
        tso_max_size: root.parse_opt(&format!("{net}/tso_max_size")),
    };
    if files != LinkSizes::default() {
        return Some(files);
    }
    serde_json::from_str(&root.read(&snapshot_path(iface)).ok()?).ok()
}

/// The socket side.
mod sys {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    /// Replies larger than this are cut (a link message with every attribute is a few KiB).
    const RECV: usize = 64 * 1024;
    /// Datagrams read before giving up on an answer that never comes.
    const MAX_DATAGRAMS: usize = 64;

    pub(super) struct Sock {
        fd: OwnedFd,
    }

    impl Sock {
        pub(super) fn open() -> io::Result<Sock> {
            // SAFETY: plain socket(2) call with constant arguments; the result is checked.
            let fd = unsafe {
                libc::socket(
                    libc::AF_NETLINK,
                    libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                    libc::NETLINK_ROUTE,
                )
            };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: fd is a fresh descriptor we own; OwnedFd closes it once.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            // the kernel answers a request at once; a bound on the wait keeps a lost answer
            // from hanging the caller
            let tv = libc::timeval {
                tv_sec: 5,
                tv_usec: 0,
            };
            // SAFETY: setsockopt with a timeval of the size passed; the result is checked.
            let rc = unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_RCVTIMEO,
                    (&tv as *const libc::timeval).cast(),
                    std::mem::size_of::<libc::timeval>() as libc::socklen_t,
                )
            };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(Sock { fd })
        }

        pub(super) fn send(&self, msg: &[u8]) -> io::Result<()> {
            // SAFETY: sockaddr_nl is plain data; all zero addresses the kernel (pid 0).
            let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
            addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
            // SAFETY: `msg` and `addr` are valid for the lengths passed; the result is checked.
            let rc = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    msg.as_ptr().cast(),
                    msg.len(),
                    0,
                    (&addr as *const libc::sockaddr_nl).cast(),
                    std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
                )
            };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        }

        /// Read datagrams until `parse` finds the answer in one.
        pub(super) fn answer<T>(
            &self,
            parse: impl Fn(&[u8]) -> io::Result<Option<T>>,
        ) -> io::Result<T> {
            let mut buf = vec![0u8; RECV];
            for _ in 0..MAX_DATAGRAMS {
                // SAFETY: `buf` is valid for RECV bytes; the result is checked.
                let n = unsafe {
                    libc::recv(
                        self.fd.as_raw_fd(),
                        buf.as_mut_ptr().cast(),
                        buf.len(),
                        libc::MSG_TRUNC,
                    )
                };
                if n < 0 {
                    let e = io::Error::last_os_error();
                    if e.kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    return Err(e);
                }
                let n = n as usize;
                if n > buf.len() {
                    return Err(io::Error::other("netlink reply larger than 64 KiB"));
                }
                if let Some(v) = parse(&buf[..n])? {
                    return Ok(v);
                }
            }
            Err(io::Error::other("no netlink answer"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                gso_max_size: Some(65_536),
                gro_max_size: Some(185_000),
                gso_ipv4_max_size: None,
                gro_ipv4_max_size: None,
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
        e[16..20].copy_from_slice(&(-libc::EINVAL).to_ne_bytes());
        let e = finish(e);
        assert_eq!(
            parse_ack(&e, 9).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
        assert_eq!(
            parse_link_reply(&e, 9).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
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
        assert_eq!(parse_link_reply(&b, 1).unwrap().unwrap().gso_max_size, None);
        assert_eq!(parse_link_reply(&[], 1).unwrap(), None);
    }

    #[test]
    fn live_lo_answers() {
        match get_sizes("lo") {
            Ok(s) => {
                eprintln!("lo: {s:?}");
                assert!(s.gso_max_size.is_some(), "{s:?}");
                if let (Some(g), Some(t)) = (s.gso_max_size, s.tso_max_size) {
                    assert!(g <= t, "{s:?}");
                }
            }
            Err(e) => eprintln!("SKIP: RTM_GETLINK lo: {e}"),
        }
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
            collect_sizes(&root, "eth0").unwrap().gso_max_size,
            Some(65_536)
        );
        let n = t.path().join("sys/class/net/eth0");
        std::fs::create_dir_all(&n).unwrap();
        std::fs::write(n.join("gso_max_size"), "185000\n").unwrap();
        std::fs::write(n.join("tso_max_size"), "524280\n").unwrap();
        let s = collect_sizes(&root, "eth0").unwrap();
        assert_eq!(
            (s.gso_max_size, s.tso_max_size, s.gro_max_size),
            (Some(185_000), Some(524_280), None)
        );
    }
}
