//! `agentplane console` (issue 27) from the command line: it serves the
//! plane in the folder, read-only, and refuses to bind off localhost
//! without a token.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

#[test]
fn issue_27_the_console_serves_the_plane_in_the_folder_and_needs_a_token_off_localhost() {
    let root = tempfile::tempdir().unwrap();
    ok(root.path(), &["demo"]);
    let plane = root.path().join("agentplane-demo");
    let dir = plane.as_path();
    let stderr = fails(dir, &["console", "--listen", "0.0.0.0:0"], 2);
    assert!(stderr.contains("without a token"), "{stderr}");
    std::fs::write(dir.join("token"), "short\n").unwrap();
    let stderr = fails(dir, &["console", "--listen", "0.0.0.0:0", "--token-file", "token"], 2);
    assert!(stderr.contains("at least 16"), "{stderr}");

    let mut child = Command::new(env!("CARGO_BIN_EXE_agentplane"))
        .current_dir(dir)
        .args(["console", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.split_whitespace().find(|word| word.starts_with("http://")).unwrap_or_else(|| panic!("{line}"));
    let run = json(dir, &["runs", "--outcome", "succeeded", "--json"])[0]["run"].as_str().unwrap().to_owned();
    let page = reqwest::blocking::get(format!("{url}/run/default/{run}")).unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let page = page.text().unwrap();
    assert!(page.contains("chain verified") && page.contains("seal leaf"), "{page}");
    let status = reqwest::blocking::Client::new().post(format!("{url}/")).send().unwrap().status().as_u16();
    assert_eq!(status, 405);
    child.kill().unwrap();
    child.wait().unwrap();
}
