//! Promises about the workspace itself: what CI runs, and the crate graph.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ sits in the workspace").to_path_buf()
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative)).unwrap_or_else(|err| panic!("reading {relative}: {err}"))
}

/// R-UX-1: CI runs exactly the README's test command, with nothing hidden.
#[test]
fn r_ux_1_ci_runs_exactly_the_readme_test_command() {
    let ci = read(".ci/run");
    let commands: Vec<&str> =
        ci.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')).collect();
    assert_eq!(commands, ["set -euo pipefail", "cargo xtask test"], ".ci/run must be the README's test command alone");
    let readme = read("README.md");
    let quick_start = readme.split("## Quick start").nth(1).expect("README has a Quick start");
    let block = quick_start.split("```").nth(1).expect("Quick start has a code block");
    let shown: Vec<&str> = block
        .lines()
        .skip(1)
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
        .collect();
    assert_eq!(shown.len(), 2, "the Quick start shows exactly two commands: {shown:?}");
    assert_eq!(shown[1], "cargo xtask test");
}

/// The tlog crate is publishable alone: it depends on no crate of ours.
#[test]
fn tlog_depends_on_no_other_agentplane_crate() {
    let manifest = read("crates/tlog/Cargo.toml");
    let dependencies: Vec<&str> = manifest
        .split("\n[")
        .filter(|section| section.starts_with("dependencies]"))
        .flat_map(|section| section.lines().skip(1))
        .filter(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
        .collect();
    assert!(!dependencies.is_empty());
    for line in dependencies {
        let name = line.split(['=', '.']).next().unwrap_or_default().trim();
        assert!(["sha2", "serde"].contains(&name), "tlog may depend only on sha2 and optional serde, found {line}");
        assert!(!line.contains("path"), "tlog must not depend on a workspace path: {line}");
    }
}

fn cargo() -> std::process::Command {
    std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// The crates in the normal (non-dev, non-build) dependency tree of
/// `package`, with features resolved as when `package` is built alone.
fn normal_tree(package: &str, extra: &[&str]) -> Vec<String> {
    let output = cargo()
        .current_dir(root())
        .args(["tree", "--offline", "-e", "normal", "--prefix", "none", "-f", "{p}", "-p", package])
        .args(extra)
        .output()
        .unwrap();
    assert!(output.status.success(), "cargo tree -p {package}: {}", String::from_utf8_lossy(&output.stderr));
    let mut names: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// journal-core and tlog carry no HTTP, no server, no database and no CLI
/// in their normal dependency trees: every backend, the audit and any
/// library user would inherit them (witness is used without `client`).
#[test]
fn the_core_crates_carry_no_http_server_database_or_cli() {
    const FORBIDDEN: [&str; 6] = ["reqwest", "hyper", "tokio", "tiny_http", "redb", "clap"];
    let cases: [(&str, &[&str]); 3] = [
        ("agentplane-journal-core", &[]),
        ("agentplane-tlog", &[]),
        ("agentplane-witness", &["--no-default-features"]),
    ];
    for (package, extra) in cases {
        let tree = normal_tree(package, extra);
        assert!(tree.iter().any(|name| name == package), "{package} is in its own tree: {tree:?}");
        let found: Vec<&String> = tree.iter().filter(|name| FORBIDDEN.contains(&name.as_str())).collect();
        assert!(found.is_empty(), "{package}'s normal dependency tree contains {found:?}");
    }
    // The check can fail: the witness client, when asked for, brings reqwest.
    let client = normal_tree("agentplane-witness", &[]);
    assert!(client.iter().any(|name| name == "reqwest"), "{client:?}");
}

/// Every dependency between our crates is an arrow the README's crate graph draws.
#[test]
fn every_dependency_between_our_crates_is_an_arrow_of_the_readme_graph() {
    let readme = read("README.md");
    let graph = readme.split("## Crate graph").nth(1).expect("README has a Crate graph section");
    let block = graph.split("```").nth(1).expect("the Crate graph section has a code block");
    let mut allowed: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    for line in block.lines().skip(1).filter(|line| line.contains("->")) {
        let (from, to) = line.split_once("->").unwrap();
        let to = to.split('(').next().unwrap_or_default();
        let targets = to.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned).collect();
        allowed.insert(from.trim().to_owned(), targets);
    }
    let output = cargo()
        .current_dir(root())
        .args(["metadata", "--offline", "--no-deps", "--format-version", "1"])
        .output()
        .unwrap();
    assert!(output.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&output.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let ours: Vec<&str> = packages.iter().map(|p| p["name"].as_str().unwrap()).collect();
    for package in packages {
        let name = package["name"].as_str().unwrap();
        let arrows = allowed.get(name).unwrap_or_else(|| panic!("the README's crate graph has no line for {name}"));
        for dependency in package["dependencies"].as_array().unwrap() {
            let target = dependency["name"].as_str().unwrap();
            let normal = dependency["kind"].is_null();
            if normal && ours.contains(&target) && target != name {
                assert!(
                    arrows.iter().any(|a| a == target),
                    "{name} depends on {target}, an arrow the README does not draw"
                );
            }
        }
    }
}
