//! No import circles anywhere: within each crate, the modules that name each other through
//! `crate::…` (in code, not in comments or tests) form no cycle. Crates cannot form one (cargo
//! refuses); modules can, and a circle is two modules that are really one, or a rule in the
//! wrong place. The test reads every crate's `src` and names the modules of any circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file of `src` belongs to (`server/test.rs` → `server`; `lib.rs` →
/// the crate root, `""`).
fn top_module(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    let name = first.trim_end_matches(".rs").to_string();
    if ["lib", "main", "mod"].contains(&name.as_str()) {
        String::new()
    } else {
        name
    }
}

/// The code of a file without its tests and comment lines.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules named as `crate::NAME` in `code`.
fn named(code: &str) -> BTreeSet<String> {
    code.match_indices("crate::")
        .map(|(i, _)| {
            code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// Every circle of `graph`: the strongly connected components with more than one module.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    // a module is in a circle with every module it reaches that reaches it back
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(m) = todo.pop() {
            for n in graph.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for (m, r) in &reached {
        let comp: BTreeSet<String> = r
            .iter()
            .filter(|n| *n != *m && reached.get(n).is_some_and(|back| back.contains(*m)))
            .cloned()
            .chain([(*m).clone()])
            .collect();
        if comp.len() > 1 && !out.contains(&comp) {
            out.push(comp);
        }
    }
    out
}

#[test]
fn no_crate_has_a_circle_of_modules() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    let mut seen_crates = 0;
    for c in std::fs::read_dir(&crates).unwrap().flatten() {
        let src = c.path().join("src");
        if !src.is_dir() {
            continue;
        }
        seen_crates += 1;
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let modules: BTreeSet<String> = files.iter().map(|f| top_module(&src, f)).collect();
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for f in &files {
            let m = top_module(&src, f);
            let text = std::fs::read_to_string(f).unwrap();
            let uses: Vec<String> = named(&code(&text))
                .into_iter()
                .filter(|n| *n != m && modules.contains(n))
                .collect();
            graph.entry(m).or_default().extend(uses);
        }
        for comp in circles(&graph) {
            found.push(format!("{}: {comp:?}", c.file_name().to_string_lossy()));
        }
    }
    assert!(seen_crates >= 10, "read only {seen_crates} crates");
    assert!(found.is_empty(), "import circles: {found:#?}");
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    let c = circles(&g);
    assert_eq!(c.len(), 1);
    assert_eq!(
        c[0],
        ["a", "b", "c"].into_iter().map(String::from).collect()
    );
    assert_eq!(
        named("use crate::x::Y; crate::zed::f()"),
        ["x", "zed"].into_iter().map(String::from).collect()
    );
}
