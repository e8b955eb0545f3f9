//! Issue 27 in a real browser: Debian's headless Chromium, driven over the
//! W3C WebDriver protocol through chromedriver (installed by `cargo xtask
//! test`, like PostgreSQL). It loads the runs page, follows a run, counts the
//! timeline's bars, reads the browser's console for errors (a blocked
//! resource or a CSP violation is one), and saves screenshots under
//! `target/console/`.
//!
//! The test speaks the protocol itself (a handful of JSON calls with
//! reqwest, already a dependency) because it also reads the browser log,
//! which chromedriver serves outside the W3C commands.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

fn program(variable: &str, default: &str) -> PathBuf {
    let path = std::env::var_os(variable).map_or_else(|| PathBuf::from(default), PathBuf::from);
    assert!(
        path.is_file(),
        "{} is missing: the console's browser test needs Debian's chromium and chromium-driver; \
         `cargo xtask test` installs them (or set {variable})",
        path.display()
    );
    path
}

/// One WebDriver call: a JSON body out, a JSON answer back.
fn send(request: reqwest::blocking::RequestBuilder, body: Option<Value>) -> Value {
    let request = match body {
        Some(body) => request.header("content-type", "application/json").body(body.to_string()),
        None => request,
    };
    serde_json::from_str(&request.send().unwrap().text().unwrap()).unwrap()
}

struct Driver {
    child: Child,
    url: String,
    session: String,
    client: reqwest::blocking::Client,
    _profile: tempfile::TempDir,
}

impl Driver {
    fn start() -> Self {
        let chromium = program("AGENTPLANE_CHROMIUM", "/usr/bin/chromium");
        let chromedriver = program("AGENTPLANE_CHROMEDRIVER", "/usr/bin/chromedriver");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
        // chromedriver answers /status once it listens; a bounded wait for a process to start.
        let deadline = Instant::now() + Duration::from_secs(30);
        while client.get(format!("{url}/status")).send().is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-quic", "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--window-size=1200,1000",
                    format!("--user-data-dir={}", profile.path().display()),
                ]
            }
        }}});
        let answer = send(client.post(format!("{url}/session")), Some(capabilities));
        let session =
            answer["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {answer}")).to_owned();
        Self { child, url, session, client, _profile: profile }
    }

    fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.url, self.session);
        let answer = send(self.client.request(method, url), body);
        assert!(answer["value"].get("error").is_none(), "{path}: {answer}");
        answer["value"].clone()
    }

    fn go(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url})));
    }

    fn elements(&self, css: &str) -> Vec<String> {
        let found = self.call(reqwest::Method::POST, "/elements", Some(json!({"using": "css selector", "value": css})));
        found
            .as_array()
            .unwrap()
            .iter()
            .map(|element| element.as_object().unwrap().values().next().unwrap().as_str().unwrap().to_owned())
            .collect()
    }

    fn text(&self, element: &str) -> String {
        self.call(reqwest::Method::GET, &format!("/element/{element}/text"), None).as_str().unwrap().to_owned()
    }

    fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.call(reqwest::Method::GET, "/screenshot", None);
        let bytes = base64::engine::general_purpose::STANDARD.decode(png.as_str().unwrap()).unwrap();
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/console");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, &bytes).unwrap();
        path
    }

    /// The browser console's entries since the last call.
    fn console_log(&self) -> Vec<Value> {
        self.call(reqwest::Method::POST, "/se/log", Some(json!({"type": "browser"}))).as_array().unwrap().clone()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.client.delete(format!("{}/session/{}", self.url, self.session)).send();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn issue_27_a_browser_follows_a_run_and_sees_one_bar_per_step_and_effect() {
    let (plane, runs) = demo();
    let console = plane.console(None);
    let browser = Driver::start();

    browser.go(&format!("{}/runs", console.url()));
    let links = browser.elements("table.runs a");
    assert_eq!(links.len(), 3, "one link per run");
    browser.screenshot("runs.png");
    let target = links
        .iter()
        .find(|link| browser.text(link) == runs[0].as_str())
        .unwrap_or_else(|| panic!("{} listed", runs[0]));
    browser.call(reqwest::Method::POST, &format!("/element/{target}/click"), Some(json!({})));
    let title = browser.call(reqwest::Method::GET, "/title", None);
    assert!(title.as_str().unwrap().contains(runs[0].as_str()), "followed the link: {title}");
    // One step and two effects: three bars, drawn by the browser.
    assert_eq!(browser.elements("svg.timeline rect.bar").len(), 3);
    assert_eq!(browser.elements("svg.timeline rect.bar.effect").len(), 2);
    let shot = browser.screenshot("run.png");
    assert!(std::fs::metadata(&shot).unwrap().len() > 1_000, "a real screenshot");

    // The hostile run: its text is text, no script ran (the title is ours).
    browser.go(&format!("{}/run/shop/{}", console.url(), runs[2]));
    let title = browser.call(reqwest::Method::GET, "/title", None);
    assert_ne!(title, "owned", "no script from a record ran");
    assert!(browser.elements("img").is_empty(), "no element from a record");
    browser.screenshot("hostile-run.png");

    let errors: Vec<Value> = browser.console_log().into_iter().filter(|entry| entry["level"] == "SEVERE").collect();
    assert!(errors.is_empty(), "the browser console has errors: {errors:#?}");
}
