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
    // R-UX-2: the refusal names the flag that exists (it said `--token`).
    assert!(stderr.contains("--token-file FILE") && !stderr.contains("--token "), "{stderr}");
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

/// Starts `agentplane console` in `dir` on a free port; the child and its URL.
fn serve(dir: &std::path::Path) -> (std::process::Child, String) {
    serve_with(dir, &[])
}

/// [`serve`] with more arguments of `console`.
fn serve_with(dir: &std::path::Path, more: &[&str]) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentplane"))
        .current_dir(dir)
        .args(["console", "--listen", "127.0.0.1:0"])
        .args(more)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.split_whitespace().find(|word| word.starts_with("http://")).unwrap_or_else(|| panic!("{line}"));
    (child, url.to_owned())
}

fn page(url: &str) -> (u16, String) {
    let response = reqwest::blocking::get(url).unwrap();
    (response.status().as_u16(), response.text().unwrap())
}

/// R-UX-3: `agentplane console --max-run-bytes` sets the most a page holds of
/// one run (the console's own bound, 64 MiB, was a library option only): a
/// run past it is "too large to show here" (413) with the commands that read
/// it, never read whole; a bound that holds it shows the run.
#[test]
fn r_ux_3_console_max_run_bytes_bounds_what_a_page_reads_of_one_run() {
    let root = tempfile::tempdir().unwrap();
    ok(root.path(), &["demo"]);
    let plane = root.path().join("agentplane-demo");
    let dir = plane.as_path();
    let run = json(dir, &["runs", "--outcome", "succeeded", "--json"])[0]["run"].as_str().unwrap().to_owned();
    let (mut child, url) = serve_with(dir, &["--max-run-bytes", "1000"]);
    let (status, shown) = page(&format!("{url}/run/default/{run}"));
    assert_eq!(status, 413, "{shown}");
    assert!(shown.contains("too large to show here") && shown.contains("agentplane export"), "{shown}");
    child.kill().unwrap();
    child.wait().unwrap();
    let (mut child, url) = serve_with(dir, &["--max-run-bytes", "1000000"]);
    let (status, shown) = page(&format!("{url}/run/default/{run}"));
    assert_eq!(status, 200, "{shown}");
    assert!(shown.contains("chain verified"), "{shown}");
    child.kill().unwrap();
    child.wait().unwrap();
    let stderr = fails(dir, &["console", "--max-run-bytes", "lots"], 2);
    assert!(stderr.contains("--max-run-bytes"), "{stderr}");
}

/// Issue 27: `agentplane audit` run in the plane's folder leaves its verdict
/// there (never in the store, which it opens read-only), and the console's
/// plane page shows it: the verdict, when, the log it covered, and whether
/// the log is still that tree or extends it once the plane has run on.
#[test]
fn issue_27_the_plane_page_shows_the_last_audit_run_from_the_command_line() {
    let root = tempfile::tempdir().unwrap();
    ok(root.path(), &["demo"]);
    let plane = root.path().join("agentplane-demo");
    let dir = plane.as_path();
    let (mut child, url) = serve(dir);
    let (_, before) = page(&url);
    assert!(before.contains("no audit has been run here yet"), "{before}");
    assert!(before.contains("agentplane audit --log-key"), "the hint of the command: {before}");

    let log_key = json(dir, &["keys", "--json"])["log_key"].as_str().unwrap().to_owned();
    let store_before = std::fs::read(dir.join("agentplane.redb")).unwrap();
    let report = json(dir, &["audit", "--log-key", &log_key, "--json"]);
    assert!(std::fs::read(dir.join("agentplane.redb")).unwrap() == store_before, "the audit never writes the store");
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("audits").join("default.json")).unwrap()).unwrap();
    assert_eq!(kept["format"], "agentplane-last-audit/v1");
    assert_eq!(kept["command"], "audit");
    assert_eq!(kept["log_size"], report["log"]["size"], "{report}");
    assert_eq!(kept["log_root"], report["log"]["root"], "{report}");
    assert_eq!(kept["verdict"], "incomplete", "no anchor: not every check was made: {kept}");
    let size = kept["log_size"].as_u64().unwrap();
    let (status, shown) = page(&url);
    assert_eq!(status, 200);
    assert!(shown.contains("agentplane audit</code> at "), "{shown}");
    assert!(shown.contains("class=\"warn\">incomplete"), "{shown}");
    assert!(shown.contains(&format!("it covered the log of {size} leaves")), "{shown}");
    assert!(shown.contains("the log is still that tree"), "{shown}");
    assert!(shown.contains("not checked: "), "what the audit did not check is shown: {shown}");

    // The plane runs on (another demo batch seals more runs): the log extends the audited tree.
    ok(root.path(), &["demo"]);
    let (_, later) = page(&url);
    assert!(later.contains("the log extends it"), "{later}");
    assert!(later.contains("(not audited since)"), "{later}");

    // `verify` (the plane's own audit, its signed checkpoints as anchors) replaces it.
    ok(dir, &["verify"]);
    let (_, verified) = page(&url);
    assert!(verified.contains("agentplane verify</code> at "), "{verified}");
    assert!(verified.contains("the log is still that tree"), "{verified}");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Issue 27, R-OPS-1: the console serves every page (200) while another
/// process appends runs to the plane (`agentplane demo`, three batches).
fn pages_load_while_another_process_writes(dir: &std::path::Path, writer_dir: &std::path::Path, writer: &[&str]) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (mut child, url) = serve(dir);
    let (_, first) = page(&format!("{url}/runs"));
    let before = first.matches("href=\"/run/").count();
    assert!(before > 0, "{first}");
    let run = first.split("href=\"/run/").nth(1).unwrap().split('"').next().unwrap().to_owned();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (stop, url) = (Arc::clone(&stop), url.clone());
        std::thread::spawn(move || {
            let mut loaded = 0_u32;
            loop {
                for path in [
                    "/".to_owned(),
                    "/runs".to_owned(),
                    "/runs?outcome=succeeded".to_owned(),
                    format!("/run/{run}"),
                    "/log".to_owned(),
                ] {
                    let (status, body) = page(&format!("{url}{path}"));
                    assert_eq!(status, 200, "{path}: {body}");
                    loaded += 1;
                }
                if stop.load(Ordering::Acquire) {
                    return loaded;
                }
            }
        })
    };
    for _ in 0..3 {
        ok(writer_dir, writer);
    }
    stop.store(true, Ordering::Release);
    let loaded = reader.join().unwrap();
    assert!(loaded >= 5, "{loaded}");
    let (_, last) = page(&format!("{url}/runs"));
    let after = last.matches("href=\"/run/").count();
    assert!(after > before, "the runs appended meanwhile are listed: {before} then {after}: {last}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn r_ops_1_the_console_beside_a_plane_another_process_writes_on_redb() {
    let root = tempfile::tempdir().unwrap();
    ok(root.path(), &["demo"]);
    pages_load_while_another_process_writes(&root.path().join("agentplane-demo"), root.path(), &["demo"]);
}

/// The same on PostgreSQL (`cargo xtask with-pg cargo test -p agentplane-cli --test console_cli`).
#[test]
fn r_ops_1_the_console_beside_a_plane_another_process_writes_on_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    point_at_a_fresh_database(dir.path());
    ok(dir.path(), &["demo"]);
    pages_load_while_another_process_writes(dir.path(), dir.path(), &["demo"]);
}
