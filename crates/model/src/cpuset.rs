//! CPU ids and CPU sets in the kernel's list (`0-3,8`) and mask (`ff,00000000`) forms.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// A logical CPU number as the kernel numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CpuId(pub u32);

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A CPU list or mask that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuSetError {
    #[error("bad CPU list {0:?}: expected e.g. 0-3,8")]
    BadList(String),
    #[error("bad CPU mask {0:?}: expected hex words such as ff,00000000")]
    BadMask(String),
    #[error("CPU list {0:?} is empty")]
    Empty(String),
}

/// A set of CPUs, ordered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSet(BTreeSet<u32>);

/// Highest CPU number accepted from a list; keeps a hostile `0-4000000000` from allocating.
pub const MAX_CPU: u32 = 1 << 16;

impl CpuSet {
    pub fn new() -> CpuSet {
        CpuSet::default()
    }

    /// Parse the kernel's list form: `0-3,8,10-11`; empty text is the empty set.
    pub fn parse_list(s: &str) -> Result<CpuSet, CpuSetError> {
        let bad = || CpuSetError::BadList(s.to_string());
        let mut set = BTreeSet::new();
        for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
            // The kernel also accepts a stride form `0-7:2` in some files; support it.
            let (range, stride) = match part.split_once(':') {
                Some((r, st)) => (r, st.parse::<u32>().map_err(|_| bad())?),
                None => (part, 1),
            };
            if stride == 0 {
                return Err(bad());
            }
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (
                    a.trim().parse::<u32>().map_err(|_| bad())?,
                    b.trim().parse::<u32>().map_err(|_| bad())?,
                ),
                None => {
                    let v = range.trim().parse::<u32>().map_err(|_| bad())?;
                    (v, v)
                }
            };
            if lo > hi || hi > MAX_CPU {
                return Err(bad());
            }
            set.extend((lo..=hi).step_by(stride as usize));
        }
        Ok(CpuSet(set))
    }

    /// Parse a list that must name at least one CPU (user input such as `--cpus`).
    pub fn parse_nonempty(s: &str) -> Result<CpuSet, CpuSetError> {
        let set = CpuSet::parse_list(s)?;
        if set.is_empty() {
            return Err(CpuSetError::Empty(s.to_string()));
        }
        Ok(set)
    }

    /// Parse the kernel's mask form: comma-separated 32-bit hex words, most significant first
    /// (`smp_affinity`, `rps_cpus`, `xps_cpus`).
    pub fn parse_mask(s: &str) -> Result<CpuSet, CpuSetError> {
        let bad = || CpuSetError::BadMask(s.to_string());
        let words: Vec<&str> = s.trim().split(',').collect();
        if words.len() > (MAX_CPU / 32) as usize {
            return Err(bad());
        }
        let mut set = BTreeSet::new();
        for (i, w) in words.iter().rev().enumerate() {
            let w = w.trim();
            if w.is_empty() || w.len() > 8 {
                return Err(bad());
            }
            let v = u32::from_str_radix(w, 16).map_err(|_| bad())?;
            for bit in 0..32 {
                if v & (1 << bit) != 0 {
                    set.insert(i as u32 * 32 + bit);
                }
            }
        }
        Ok(CpuSet(set))
    }

    /// The mask form the kernel prints and accepts, with as many 32-bit words as `nr_cpus` needs.
    pub fn to_mask(&self, nr_cpus: u32) -> String {
        let top = self.0.iter().next_back().map_or(0, |c| c + 1);
        let words = nr_cpus.max(top).max(1).div_ceil(32);
        let mut out = Vec::new();
        for w in (0..words).rev() {
            let mut v: u32 = 0;
            for bit in 0..32 {
                if self.0.contains(&(w * 32 + bit)) {
                    v |= 1 << bit;
                }
            }
            if w == words - 1 {
                let digits = (nr_cpus.saturating_sub(w * 32)).clamp(1, 32).div_ceil(4) as usize;
                out.push(format!("{v:0digits$x}"));
            } else {
                out.push(format!("{v:08x}"));
            }
        }
        out.join(",")
    }

    pub fn from_cpus(cpus: impl IntoIterator<Item = u32>) -> CpuSet {
        CpuSet(cpus.into_iter().collect())
    }

    pub fn insert(&mut self, cpu: u32) -> bool {
        self.0.insert(cpu)
    }

    pub fn contains(&self, cpu: u32) -> bool {
        self.0.contains(&cpu)
    }

    /// The set in a sentence: `CPU 3`, `CPUs 2-3`, `no CPU`.
    pub fn words(&self) -> String {
        match self.len() {
            0 => "no CPU".to_string(),
            1 => format!("CPU {self}"),
            _ => format!("CPUs {self}"),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = u32> + '_ {
        self.0.iter().copied()
    }

    pub fn first(&self) -> Option<u32> {
        self.0.first().copied()
    }

    pub fn union(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.union(&other.0).copied().collect())
    }

    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.intersection(&other.0).copied().collect())
    }

    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.difference(&other.0).copied().collect())
    }

    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }

    pub fn intersects(&self, other: &CpuSet) -> bool {
        !self.0.is_disjoint(&other.0)
    }

    /// The one check that CPUs a person named (`flag`: `--app-cpus`) can be used: every CPU of
    /// the set in `online`, and in `allowed` (the CPUs the cgroup and the affinity let this
    /// process run on) when that is known. An empty `online` (the list could not be read) checks
    /// nothing online.
    pub fn check_usable(
        &self,
        flag: &str,
        online: &CpuSet,
        allowed: Option<&CpuSet>,
    ) -> Result<(), UnusableCpus> {
        let off = self.difference(online);
        if !online.is_empty() && !off.is_empty() {
            return Err(UnusableCpus::NotOnline {
                flag: flag.to_string(),
                cpus: self.clone(),
                off,
                online: online.clone(),
            });
        }
        match allowed {
            Some(allowed) if !allowed.is_empty() && !self.is_subset(allowed) => {
                Err(UnusableCpus::NotAllowed {
                    flag: flag.to_string(),
                    cpus: self.clone(),
                    denied: self.difference(allowed),
                    allowed: allowed.clone(),
                })
            }
            _ => Ok(()),
        }
    }
}

fn is_are(set: &CpuSet) -> &'static str {
    if set.len() == 1 {
        "is"
    } else {
        "are"
    }
}

/// CPUs a person named that cannot be used ([`CpuSet::check_usable`]), in one sentence for
/// every command: `--app-cpus 1,5,7: CPUs 5,7 are not online on this host (online: 0-1)`,
/// `--cpus 2-3: CPU 3 is not allowed for this process (allowed by its cgroup and affinity: 0-2)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnusableCpus {
    #[error("{flag} {cpus}: {} {} not online on this host (online: {online})", off.words(), is_are(off))]
    NotOnline {
        flag: String,
        cpus: CpuSet,
        /// The CPUs of `cpus` that are not online.
        off: CpuSet,
        online: CpuSet,
    },
    #[error("{flag} {cpus}: {} {} not allowed for this process (allowed by its cgroup and affinity: {allowed})", denied.words(), is_are(denied))]
    NotAllowed {
        flag: String,
        cpus: CpuSet,
        /// The CPUs of `cpus` outside `allowed`.
        denied: CpuSet,
        allowed: CpuSet,
    },
}

impl UnusableCpus {
    /// The option that named the CPUs.
    pub fn flag(&self) -> &str {
        match self {
            UnusableCpus::NotOnline { flag, .. } | UnusableCpus::NotAllowed { flag, .. } => flag,
        }
    }
}

impl Extend<u32> for CpuSet {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, cpus: I) {
        self.0.extend(cpus);
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        CpuSet(iter.into_iter().collect())
    }
}

/// The kernel's list form, ranges collapsed: `0-3,8`.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut it = self.0.iter().copied().peekable();
        while let Some(lo) = it.next() {
            let mut hi = lo;
            while it.peek() == Some(&(hi + 1)) {
                hi = it.next().unwrap_or(hi);
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

impl FromStr for CpuSet {
    type Err = CpuSetError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CpuSet::parse_list(s)
    }
}

impl Serialize for CpuSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        CpuSet::parse_list(&s).map_err(serde::de::Error::custom)
    }
}

/// Serde for a CPU set written as an array of CPU numbers (`[0, 1, 8]`), the form the
/// protocol extension and the reports use (the set's own serde form is the kernel's list text,
/// `"0-1,8"`): `#[serde(with = "wirespeed_model::cpuset::as_array")]`. Decoding rejects CPU
/// numbers above [`MAX_CPU`]; order and duplicates in the input do not matter.
pub mod as_array {
    use super::{CpuSet, MAX_CPU};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(set: &CpuSet, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(set.iter())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<CpuSet, D::Error> {
        let v = Vec::<u32>::deserialize(d)?;
        if let Some(c) = v.iter().find(|&&c| c > MAX_CPU) {
            return Err(serde::de::Error::custom(format!(
                "CPU {c} is above {MAX_CPU}"
            )));
        }
        Ok(v.into_iter().collect())
    }

    /// The same for an optional set (`None` is written as no key or `null`).
    pub mod option {
        use super::CpuSet;
        use serde::{Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer>(set: &Option<CpuSet>, s: S) -> Result<S::Ok, S::Error> {
            match set {
                Some(c) => super::serialize(c, s),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<CpuSet>, D::Error> {
            #[derive(Deserialize)]
            struct Wrap(#[serde(with = "super")] CpuSet);
            Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_round_trips() {
        let s = CpuSet::parse_list("0-3,8,10-11\n").unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(s.to_string(), "0-3,8,10-11");
        assert_eq!(CpuSet::parse_list("").unwrap().len(), 0);
        assert_eq!(CpuSet::parse_list("0-6:2").unwrap().to_string(), "0,2,4,6");
        for bad in ["a", "3-1", "1-", "-1", "0-99999999", "1:0"] {
            assert!(CpuSet::parse_list(bad).is_err(), "{bad}");
        }
        assert!(CpuSet::parse_nonempty(" ").is_err());
    }

    #[test]
    fn masks_parse_and_print_as_the_kernel_does() {
        assert_eq!(CpuSet::parse_mask("fff").unwrap().to_string(), "0-11");
        assert_eq!(CpuSet::parse_mask("00000080").unwrap().to_string(), "7");
        assert_eq!(
            CpuSet::parse_mask("00000001,00000000").unwrap().to_string(),
            "32"
        );
        assert_eq!(CpuSet::parse_list("7").unwrap().to_mask(12), "080");
        assert_eq!(CpuSet::parse_list("0-11").unwrap().to_mask(12), "fff");
        assert_eq!(CpuSet::parse_list("32").unwrap().to_mask(40), "01,00000000");
        assert!(CpuSet::parse_mask("xyz").is_err());
        assert!(CpuSet::parse_mask("123456789").is_err());
    }

    #[test]
    fn set_algebra() {
        let a = CpuSet::parse_list("0-5").unwrap();
        let b = CpuSet::parse_list("4-7").unwrap();
        assert_eq!(a.intersection(&b).to_string(), "4-5");
        assert_eq!(a.difference(&b).to_string(), "0-3");
        assert!(a.intersects(&b));
        assert!(!CpuSet::parse_list("6").unwrap().is_subset(&a));
    }

    #[test]
    fn as_array_writes_numbers_and_caps_them() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct T {
            #[serde(with = "as_array")]
            a: CpuSet,
            #[serde(
                default,
                with = "as_array::option",
                skip_serializing_if = "Option::is_none"
            )]
            b: Option<CpuSet>,
        }
        let t = T {
            a: CpuSet::from_cpus([8, 0, 1]),
            b: None,
        };
        assert_eq!(serde_json::to_string(&t).unwrap(), r#"{"a":[0,1,8]}"#);
        let back: T = serde_json::from_str(r#"{"a":[8,1,0,1],"b":[3]}"#).unwrap();
        assert_eq!(back.a, t.a);
        assert_eq!(back.b, Some(CpuSet::from_cpus([3])));
        assert!(serde_json::from_str::<T>(r#"{"a":[99999999]}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"a":[-1]}"#).is_err());
    }

    #[test]
    fn one_sentence_for_cpus_that_cannot_be_used() {
        let on = CpuSet::from_cpus([0, 1]);
        assert_eq!(
            CpuSet::from_cpus([1]).check_usable("--cpus", &on, None),
            Ok(())
        );
        assert_eq!(
            CpuSet::from_cpus([7]).check_usable("--cpus", &CpuSet::new(), None),
            Ok(())
        );
        let e = CpuSet::from_cpus([1, 5, 7])
            .check_usable("--app-cpus", &on, Some(&on))
            .unwrap_err();
        assert!(
            matches!(&e, UnusableCpus::NotOnline { off, .. } if *off == CpuSet::from_cpus([5, 7]))
        );
        assert_eq!(e.flag(), "--app-cpus");
        assert_eq!(
            e.to_string(),
            "--app-cpus 1,5,7: CPUs 5,7 are not online on this host (online: 0-1)"
        );
        let e = CpuSet::from_cpus([3])
            .check_usable("--cpus", &on, None)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--cpus 3: CPU 3 is not online on this host (online: 0-1)"
        );
        // online but outside what the cgroup allows; an unread (empty) allowed list checks nothing
        let on = CpuSet::from_cpus([0, 1, 2, 3]);
        let allowed = CpuSet::from_cpus([0, 1, 2]);
        let e = CpuSet::from_cpus([2, 3])
            .check_usable("--cpus", &on, Some(&allowed))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--cpus 2-3: CPU 3 is not allowed for this process (allowed by its cgroup and affinity: 0-2)"
        );
        assert_eq!(
            CpuSet::from_cpus([3]).check_usable("--cpus", &on, Some(&CpuSet::new())),
            Ok(())
        );
    }
}
