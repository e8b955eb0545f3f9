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
