//! The published manifest: every library dependency is used, since each one
//! is built by every user of the crate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::path::Path;

#[test]
fn every_declared_dependency_is_used_by_the_library() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let names: Vec<String> = manifest
        .split("\n[")
        .filter(|section| section.starts_with("dependencies]"))
        .flat_map(|section| section.lines().skip(1))
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| line.split(['=', '.', ' ']).next().unwrap_or_default().to_owned())
        .collect();
    assert!(names.iter().any(|name| name == "sha2"), "the [dependencies] section was read: {names:?}");
    let mut source = String::new();
    for entry in std::fs::read_dir(root.join("src")).unwrap() {
        source.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    for name in names {
        // Our crates publish as `agentplane-<lib>` with the short lib name.
        let path = name.strip_prefix("agentplane-").unwrap_or(&name).replace('-', "_");
        assert!(
            source.contains(&format!("{path}::")),
            "`{name}` is a dependency in Cargo.toml that src/ never uses: remove it, every user of the crate builds it"
        );
    }
}
