//! Test helpers for trees standing for a host: the captured hosts of this repository, copying a
//! tree (links kept as links), and its state file by file for byte-identical comparisons.
//!
//! Shared by tune's tests, the drive crate's IRQ sweep test, engine's tune-slot test and the CLI's tune
//! and doctor tests (`crates/cli/tests/cli/host_common.rs`), which include this file by path, so
//! it uses nothing but std, tempfile and serde_json.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// `tests/fixtures/hosts` of this repository.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hosts")
}

/// Every captured host (a directory with an `EXPECTED.json`): (name, its directory), by name.
pub fn hosts() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = fs::read_dir(fixtures())
        .expect("tests/fixtures/hosts")
        .map(|e| e.expect("fixture entry"))
        .filter(|e| e.path().join("EXPECTED.json").is_file())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no captured hosts found");
    out
}

/// A host's `EXPECTED.json`.
pub fn expected(host: &Path) -> serde_json::Value {
    let text = fs::read_to_string(host.join("EXPECTED.json")).expect("EXPECTED.json");
    serde_json::from_str(&text).expect("EXPECTED.json is JSON")
}

/// Copy a tree: directories, regular files (content and permission bits) and symbolic links as
/// links (their targets unchanged).
pub fn copy_tree(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap();
    let mut entries: Vec<_> = fs::read_dir(src).unwrap().map(|e| e.unwrap()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let from = e.path();
        let to = dst.join(e.file_name());
        let md = fs::symlink_metadata(&from).unwrap();
        if md.file_type().is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&from).unwrap(), &to).unwrap();
        } else if md.is_dir() {
            copy_tree(&from, &to);
            fs::set_permissions(&to, md.permissions()).unwrap();
        } else {
            fs::copy(&from, &to).unwrap();
            fs::set_permissions(&to, md.permissions()).unwrap();
        }
    }
}

/// A tree copied to a temporary directory (removed when the guard drops).
pub fn temp_copy(host: &Path) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("host");
    copy_tree(host, &dir);
    (t, dir)
}

/// Write `text` to `rel` below `dir`, creating the directories above it.
pub fn put(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// Every file, link and directory below `dir` with its content / target and permission bits,
/// except tune's own record: the journal directory `var/lib/wirespeed` (and `var`, `var/lib`,
/// which may exist only to hold it).
pub fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let p = e.path();
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            if rel == "var/lib/wirespeed" {
                continue;
            }
            let md = fs::symlink_metadata(&p).unwrap();
            let mode = md.permissions().mode() & 0o7777;
            if md.file_type().is_symlink() {
                out.insert(
                    rel,
                    format!("link -> {}", fs::read_link(&p).unwrap().display()),
                );
            } else if md.is_dir() {
                if rel != "var" && rel != "var/lib" {
                    out.insert(rel.clone(), format!("dir {mode:o}"));
                }
                walk(base, &p, out);
            } else {
                let bytes = fs::read(&p).unwrap();
                out.insert(
                    rel,
                    format!("file {mode:o} {:?}", String::from_utf8_lossy(&bytes)),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The differences between two snapshots, for a readable assertion message.
pub fn diff(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let mut d = Vec::new();
    for (k, v) in a {
        match b.get(k) {
            None => d.push(format!("only before: {k}")),
            Some(w) if w != v => d.push(format!("changed: {k}: {v} -> {w}")),
            _ => {}
        }
    }
    for k in b.keys() {
        if !a.contains_key(k) {
            d.push(format!("only after: {k}"));
        }
    }
    d
}
