//! A process's CPU-time limit: the CFS bandwidth quota of its cgroup and of the cgroups above
//! it (v2 `cpu.max`; v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us`), and the throttling counters
//! of the cgroup whose limit is tightest (`cpu.stat`); and the CPUs it may run on, within its
//! cgroup's cpuset ([`allowed_cpus`]).
//!
//! A container limited to half a CPU shows idle CPUs while its threads wait for the next period:
//! no CPU looks saturated, yet the test ran out of CPU time. The parsers take text; [`cpu_limit`]
//! and [`read_cpu_stat`] read through a [`Root`]. Paths come from files of the tree read, so each
//! is checked by [`Root::path`] (a `..` in a captured `/proc/self/cgroup` reads nothing).

use crate::{CpuSet, Root};

/// One line of `/proc/PID/cgroup`: `hierarchy-ID:controller-list:path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupLine {
    pub hierarchy: u32,
    /// The v1 controllers of this hierarchy (`cpu`, `cpuacct`); empty for v2 (`0::/path`).
    pub controllers: Vec<String>,
    pub path: String,
}

/// `/proc/PID/cgroup`; lines that do not parse are skipped.
pub fn parse_proc_cgroup(text: &str) -> Vec<CgroupLine> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ':');
            let hierarchy = f.next()?.trim().parse().ok()?;
            let controllers = f
                .next()?
                .split(',')
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect();
            let path = f.next()?.to_string();
            path.starts_with('/').then_some(CgroupLine {
                hierarchy,
                controllers,
                path,
            })
        })
        .collect()
}

/// A cgroup file system mounted on this host, from `/proc/PID/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupMount {
    /// Where it is mounted (`/sys/fs/cgroup/cpu`).
    pub mount_point: String,
    /// The cgroup seen at the mount point (`/` unless a cgroup namespace or a bind mount).
    pub root: String,
    /// cgroup2 (unified) rather than a v1 hierarchy.
    pub v2: bool,
    /// A v1 hierarchy's controllers (from its super options).
    pub controllers: Vec<String>,
}

/// The octal escapes the kernel writes in mountinfo paths (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|o| o.iter().all(|c| (b'0'..=b'7').contains(c)));
        match oct {
            Some(o) if b[i] == b'\\' => {
                let v = o.iter().fold(0u32, |a, c| a * 8 + u32::from(c - b'0'));
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The cgroup mounts of `/proc/PID/mountinfo`; other lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<CgroupMount> {
    text.lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let pre: Vec<&str> = pre.split_ascii_whitespace().collect();
            let mut post = post.split_ascii_whitespace();
            let fstype = post.next()?;
            let _source = post.next()?;
            let options = post.next().unwrap_or("");
            let v2 = match fstype {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            let controllers = if v2 {
                Vec::new()
            } else {
                options
                    .split(',')
                    .filter(|o| !o.contains('=') && !matches!(*o, "rw" | "ro"))
                    .map(str::to_string)
                    .collect()
            };
            Some(CgroupMount {
                root: unescape(pre.get(3)?),
                mount_point: unescape(pre.get(4)?),
                v2,
                controllers,
            })
        })
        .collect()
}

/// A CFS bandwidth limit: `quota_us` of CPU time in every `period_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bandwidth {
    pub quota_us: u64,
    pub period_us: u64,
}

impl Bandwidth {
    /// CPUs' worth of time the limit allows (quota / period).
    pub fn cpus(&self) -> f64 {
        self.quota_us as f64 / self.period_us as f64
    }
}

/// v2 `cpu.max` (`max 100000`, `50000 100000`): `None` when unlimited or unreadable.
pub fn parse_cpu_max(text: &str) -> Option<Bandwidth> {
    let mut f = text.split_ascii_whitespace();
    let quota = f.next()?;
    let period_us: u64 = f.next().map_or(Some(100_000), |p| p.parse().ok())?;
    let quota_us: u64 = quota.parse().ok()?; // `max` does not parse: unlimited
    (quota_us > 0 && period_us > 0).then_some(Bandwidth {
        quota_us,
        period_us,
    })
}

/// v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us`: `None` when unlimited (`-1`) or unreadable.
pub fn parse_cfs(quota: &str, period: &str) -> Option<Bandwidth> {
    let quota_us: i64 = quota.trim().parse().ok()?;
    let period_us: u64 = period.trim().parse().ok()?;
    (quota_us > 0 && period_us > 0).then_some(Bandwidth {
        quota_us: quota_us as u64,
        period_us,
    })
}

/// `cpu.stat`'s throttling counters (v2 `throttled_usec`, v1 `throttled_time` in ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuStat {
    pub nr_periods: u64,
    pub nr_throttled: u64,
    pub throttled_us: u64,
}

impl CpuStat {
    /// The counts between an earlier reading and this one (a counter that went back: 0).
    pub fn since(&self, earlier: &CpuStat) -> CpuStat {
        CpuStat {
            nr_periods: self.nr_periods.saturating_sub(earlier.nr_periods),
            nr_throttled: self.nr_throttled.saturating_sub(earlier.nr_throttled),
            throttled_us: self.throttled_us.saturating_sub(earlier.throttled_us),
        }
    }
}

/// `cpu.stat`; `None` without `nr_periods` (a v2 cgroup without the cpu controller has only
/// the usage lines).
pub fn parse_cpu_stat(text: &str) -> Option<CpuStat> {
    let mut s = CpuStat::default();
    let mut periods = false;
    for l in text.lines() {
        let mut f = l.split_ascii_whitespace();
        let (Some(k), Some(v)) = (f.next(), f.next().and_then(|v| v.parse::<u64>().ok())) else {
            continue;
        };
        match k {
            "nr_periods" => {
                s.nr_periods = v;
                periods = true;
            }
            "nr_throttled" => s.nr_throttled = v,
            "throttled_usec" => s.throttled_us = v,
            "throttled_time" => s.throttled_us = v / 1000,
            _ => {}
        }
    }
    periods.then_some(s)
}

/// The tightest CPU-time limit on a process: the cgroup that holds it and its files' directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuLimit {
    /// The cgroup's path in its hierarchy (`/kubepods/pod1`).
    pub cgroup: String,
    /// Its directory on this host (`/sys/fs/cgroup/cpu/kubepods/pod1`), for [`read_cpu_stat`].
    pub dir: String,
    pub bandwidth: Bandwidth,
    pub v2: bool,
}

/// How deep the walk up a cgroup path goes (a hostile tree can nest without end).
const MAX_DEPTH: usize = 64;

/// The tightest CFS limit on process `pid` (`self`, or a number) under `root`: its cgroup's and
/// each ancestor's up to the mount's root, in the cpu hierarchy (v1) or the unified one (v2, when
/// no v1 hierarchy has the cpu controller). `None` when no cgroup limits it or nothing could be
/// read.
pub fn cpu_limit(root: &Root, pid: &str) -> Option<CpuLimit> {
    let lines = parse_proc_cgroup(&root.read_opt(&format!("/proc/{pid}/cgroup"))?);
    let mounts = parse_mountinfo(&root.read_opt(&format!("/proc/{pid}/mountinfo"))?);
    let v1 = lines
        .iter()
        .find(|l| l.controllers.iter().any(|c| c == "cpu"))
        .and_then(|l| {
            let m = mounts
                .iter()
                .find(|m| !m.v2 && m.controllers.iter().any(|c| c == "cpu"))?;
            Some((l, m))
        });
    let (line, mount) = match v1 {
        Some(x) => x,
        None => {
            let l = lines.iter().find(|l| l.hierarchy == 0)?;
            (l, mounts.iter().find(|m| m.v2)?)
        }
    };
    // the cgroup path relative to what the mount shows
    let rel = if mount.root == "/" {
        line.path.as_str()
    } else {
        line.path.strip_prefix(mount.root.as_str())?
    };
    let mut parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
    if parts.iter().any(|p| matches!(*p, "." | "..")) || parts.len() > MAX_DEPTH {
        return None;
    }
    let mut best: Option<CpuLimit> = None;
    loop {
        let sub = parts.join("/");
        let dir = if sub.is_empty() {
            mount.mount_point.clone()
        } else {
            format!("{}/{sub}", mount.mount_point.trim_end_matches('/'))
        };
        let bw = if mount.v2 {
            root.read_opt(&format!("{dir}/cpu.max"))
                .and_then(|t| parse_cpu_max(&t))
        } else {
            match (
                root.read_opt(&format!("{dir}/cpu.cfs_quota_us")),
                root.read_opt(&format!("{dir}/cpu.cfs_period_us")),
            ) {
                (Some(q), Some(p)) => parse_cfs(&q, &p),
                _ => None,
            }
        };
        if let Some(bw) = bw {
            if best.as_ref().is_none_or(|b| bw.cpus() < b.bandwidth.cpus()) {
                best = Some(CpuLimit {
                    cgroup: format!("/{sub}"),
                    dir,
                    bandwidth: bw,
                    v2: mount.v2,
                });
            }
        }
        if parts.pop().is_none() {
            break;
        }
    }
    best
}

/// The throttling counters of the cgroup whose files are in `dir` ([`CpuLimit::dir`]).
pub fn read_cpu_stat(root: &Root, dir: &str) -> Option<CpuStat> {
    parse_cpu_stat(&root.read_opt(&format!("{dir}/cpu.stat"))?)
}

/// The CPUs process `pid` may run on, from `Cpus_allowed_list:` of `/proc/PID/status` text: the
/// kernel's answer, its affinity within its cgroup's `cpuset` (`cpuset.cpus.effective`).
pub fn parse_cpus_allowed(status: &str) -> Option<CpuSet> {
    status.lines().find_map(|l| {
        let v = l.strip_prefix("Cpus_allowed_list:")?;
        CpuSet::parse_nonempty(v.trim()).ok()
    })
}

/// The CPUs process `pid` (`self`, or a number) may run on under `root` ([`parse_cpus_allowed`]);
/// `None` when the tree has no such status (a captured tree, a snapshot).
pub fn allowed_cpus(root: &Root, pid: &str) -> Option<CpuSet> {
    parse_cpus_allowed(&root.read_opt(&format!("/proc/{pid}/status"))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpus_a_process_may_run_on() {
        let status = "Name:\twirespeed\nCpus_allowed:\t0f\nCpus_allowed_list:\t0-2,5\nMems_allowed_list:\t0\n";
        assert_eq!(
            parse_cpus_allowed(status),
            Some(CpuSet::from_cpus([0, 1, 2, 5]))
        );
        assert_eq!(parse_cpus_allowed("Name:\tx\n"), None);
        assert_eq!(parse_cpus_allowed("Cpus_allowed_list:\t\n"), None);
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("proc/self")).unwrap();
        let root = Root::new(t.path());
        assert_eq!(allowed_cpus(&root, "self"), None);
        std::fs::write(t.path().join("proc/self/status"), status).unwrap();
        assert_eq!(
            allowed_cpus(&root, "self"),
            Some(CpuSet::from_cpus([0, 1, 2, 5]))
        );
    }

    #[test]
    fn proc_cgroup_v1_and_v2() {
        let t = "12:cpu,cpuacct:/kubepods/pod1\n4:memory:/x\n0::/user.slice\nbad line\n3:cpuset:relative\n";
        let l = parse_proc_cgroup(t);
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].controllers, vec!["cpu", "cpuacct"]);
        assert_eq!(l[0].path, "/kubepods/pod1");
        assert_eq!((l[2].hierarchy, l[2].controllers.len()), (0, 0));
    }

    #[test]
    fn mountinfo_finds_cgroup_mounts() {
        let t = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                 32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n\
                 33 31 0:30 / /sys/fs/cgroup/name=systemd rw - cgroup cgroup rw,name=systemd\n\
                 41 31 0:38 /ns /sys/fs/cgroup/my\\040dir rw shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
        let m = parse_mountinfo(t);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].mount_point, "/sys/fs/cgroup/cpu,cpuacct");
        assert_eq!(m[0].controllers, vec!["cpu", "cpuacct"]);
        assert!(m[1].controllers.is_empty());
        assert!(m[2].v2);
        assert_eq!(
            (m[2].root.as_str(), m[2].mount_point.as_str()),
            ("/ns", "/sys/fs/cgroup/my dir")
        );
    }

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (p, t) in files {
            let f = dir.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, t).unwrap();
        }
        dir
    }

    #[test]
    fn the_tightest_limit_up_the_tree_is_found() {
        let mi = "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n\
                  40 31 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        let cpu = "/sys/fs/cgroup/cpu";
        let t = tree(&[
            ("/proc/self/cgroup", "3:cpu:/pods/a\n0::/\n"),
            ("/proc/self/mountinfo", mi),
            // the pod allows 4 CPUs, the container inside it 0.5
            (&format!("{cpu}/pods/cpu.cfs_quota_us"), "400000"),
            (&format!("{cpu}/pods/cpu.cfs_period_us"), "100000"),
            (&format!("{cpu}/pods/a/cpu.cfs_quota_us"), "50000"),
            (&format!("{cpu}/pods/a/cpu.cfs_period_us"), "100000"),
            (
                &format!("{cpu}/pods/a/cpu.stat"),
                "nr_periods 9\nnr_throttled 8\nthrottled_time 2000\n",
            ),
            (&format!("{cpu}/cpu.cfs_quota_us"), "-1"),
            (&format!("{cpu}/cpu.cfs_period_us"), "100000"),
        ]);
        let root = Root::new(t.path());
        let l = cpu_limit(&root, "self").unwrap();
        assert_eq!(
            (l.cgroup.as_str(), l.bandwidth.cpus(), l.v2),
            ("/pods/a", 0.5, false)
        );
        assert_eq!(l.dir, "/sys/fs/cgroup/cpu/pods/a");
        assert_eq!(read_cpu_stat(&root, &l.dir).unwrap().nr_throttled, 8);

        // v2 only: the unified hierarchy's cpu.max; a parent's tighter limit wins
        let t = tree(&[
            ("/proc/self/cgroup", "0::/system.slice/ws.service\n"),
            (
                "/proc/self/mountinfo",
                "40 31 0:37 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            ),
            ("/sys/fs/cgroup/system.slice/cpu.max", "20000 100000\n"),
            (
                "/sys/fs/cgroup/system.slice/ws.service/cpu.max",
                "max 100000\n",
            ),
        ]);
        let l = cpu_limit(&Root::new(t.path()), "self").unwrap();
        assert_eq!(
            (l.cgroup.as_str(), l.bandwidth.cpus(), l.v2),
            ("/system.slice", 0.2, true)
        );

        // no limit anywhere, and a path that climbs out of the hierarchy: nothing
        let t = tree(&[
            ("/proc/self/cgroup", "0::/a/../../etc\n"),
            (
                "/proc/self/mountinfo",
                "40 31 0:37 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            ),
            ("/sys/fs/cgroup/cpu.max", "max 100000\n"),
            ("/etc/cpu.max", "1000 100000\n"),
        ]);
        assert_eq!(cpu_limit(&Root::new(t.path()), "self"), None);
        assert_eq!(cpu_limit(&Root::new(t.path()), "1"), None);
    }

    #[test]
    fn limits_and_counters_parse() {
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        let b = parse_cpu_max("50000 100000\n").unwrap();
        assert_eq!(b.cpus(), 0.5);
        assert_eq!(parse_cpu_max("0 100000"), None);
        assert_eq!(parse_cpu_max("garbage"), None);
        assert_eq!(parse_cfs("-1\n", "100000\n"), None);
        assert_eq!(parse_cfs("150000", "100000").unwrap().cpus(), 1.5);
        assert_eq!(parse_cfs("100", "0"), None);
        let v1 = "nr_periods 40\nnr_throttled 30\nthrottled_time 1500000000\n";
        assert_eq!(
            parse_cpu_stat(v1),
            Some(CpuStat {
                nr_periods: 40,
                nr_throttled: 30,
                throttled_us: 1_500_000
            })
        );
        let v2 = "usage_usec 5\nnr_periods 10\nnr_throttled 2\nthrottled_usec 700\n";
        assert_eq!(parse_cpu_stat(v2).unwrap().throttled_us, 700);
        assert_eq!(parse_cpu_stat("usage_usec 5\n"), None);
        let d = parse_cpu_stat(v1)
            .unwrap()
            .since(&parse_cpu_stat(v2).unwrap());
        assert_eq!((d.nr_periods, d.nr_throttled), (30, 28));
    }
}
