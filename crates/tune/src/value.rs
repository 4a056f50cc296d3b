//! Values of host settings in the forms the kernel prints and accepts, compared normalized.
//!
//! The kernel prints `0-3` where a user wrote `0,1,2,3`, a mask `00000080` where a script wrote
//! `80`, and tabs where `sysctl -w` took spaces; a journal must treat those as equal, or revert
//! would call the kernel's own echo "changed by someone else".

use serde::{Deserialize, Serialize};
use wirespeed_host::CpuSet;

/// How a setting's value is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Form {
    /// A CPU list (`smp_affinity_list`): `0-3` equals `0,1,2,3`.
    CpuList,
    /// A CPU mask (`rps_cpus`, `xps_cpus`, `smp_affinity`): `080` equals `00000080`.
    Mask,
    /// Words separated by any white space (numbers, `tcp_rmem` triples, governor names).
    Words,
    /// Exact text (files we create).
    Exact,
    /// A named option the kernel prints with its number (a bond's `xmit_hash_policy`:
    /// `layer2 0`) and accepts by either: compared by the name, the first word.
    Named,
}

impl Form {
    /// The canonical form of `value`; text that does not parse in this form falls back to its
    /// white-space-normalized words, so a comparison never fails, it only differs.
    pub fn normalize(self, value: &str) -> String {
        let words = || value.split_whitespace().collect::<Vec<_>>().join(" ");
        match self {
            Form::CpuList => CpuSet::parse_list(value)
                .map(|s| s.to_string())
                .unwrap_or_else(|_| words()),
            Form::Mask => CpuSet::parse_mask(value)
                .map(|s| format!("cpus:{s}"))
                .unwrap_or_else(|_| words()),
            Form::Words => words(),
            Form::Exact => value.to_string(),
            Form::Named => value.split_whitespace().next().unwrap_or("").to_string(),
        }
    }

    /// True when two values are the same setting.
    pub fn same(self, a: &str, b: &str) -> bool {
        self.normalize(a) == self.normalize(b)
    }
}

/// A sysctl's key (`net.core.rmem_max`) from its procfs path (`/proc/sys/net/core/rmem_max`).
pub fn sysctl_key(path: &str) -> Option<String> {
    path.strip_prefix("/proc/sys/").map(|k| k.replace('/', "."))
}

/// Quote a value for a POSIX shell when it needs it.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.,:/=+@%".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_masks_and_words_compare_normalized() {
        assert!(Form::CpuList.same("0-3", "0,1,2,3\n"));
        assert!(Form::CpuList.same(" 7 ", "7"));
        assert!(!Form::CpuList.same("7", "8"));
        assert!(Form::Mask.same("080", "00000080"));
        assert!(Form::Mask.same("00000000,00000080\n", "80"));
        assert!(!Form::Mask.same("80", "40"));
        assert!(Form::Words.same("4096\t131072\t6291456\n", "4096 131072  6291456"));
        assert!(!Form::Words.same("4096 131072 6291456", "4096 131072 6291457"));
        assert!(!Form::Exact.same("a\n", "a"));
        // text that does not parse still compares, by its words
        assert!(Form::CpuList.same("garbage  x", "garbage x"));
        // a bonding option: the kernel echoes the name with its number
        assert!(Form::Named.same("layer3+4 1\n", "layer3+4"));
        assert!(!Form::Named.same("layer2 0\n", "layer3+4"));
        assert!(!Form::Words.same("layer3+4 1", "layer3+4"));
    }

    #[test]
    fn sysctl_keys_and_quoting() {
        assert_eq!(
            sysctl_key("/proc/sys/net/ipv4/tcp_rmem").as_deref(),
            Some("net.ipv4.tcp_rmem")
        );
        assert_eq!(sysctl_key("/sys/class/net/x/mtu"), None);
        assert_eq!(shell_quote("268435456"), "268435456");
        assert_eq!(
            shell_quote("4096 131072 268435456"),
            "'4096 131072 268435456'"
        );
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
