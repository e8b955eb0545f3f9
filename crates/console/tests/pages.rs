//! Issue 27: every page of the console over real HTTP on a redb plane:
//! status, content, escaping of agent-supplied text, no write method, the
//! token off localhost, and pages that keep loading while runs are appended.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use journal_core::testkit::TamperAccess;

#[test]
fn the_plane_page_shows_each_log_and_its_verified_checkpoint() {
    let (plane, _) = demo();
    let console = plane.console(None);
    let (status, page) = get(console.url());
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(ORIGIN), "{page}");
    assert!(page.contains("3 runs"), "{page}");
    assert!(page.contains("signature verified: log key"), "the signed checkpoint is verified: {page}");
    assert!(page.contains("agentplane audit"), "a hint of the command that audits");
}

#[test]
fn the_runs_page_filters_by_outcome_and_finds_a_run_by_its_idempotency_key() {
    let (plane, runs) = demo();
    let console = plane.console(None);
    let (status, page) = get(&format!("{}/runs", console.url()));
    assert_eq!(status, 200);
    for run in &runs {
        assert!(page.contains(run.as_str()), "{run} listed: {page}");
    }
    assert!(page.contains("3 runs, newest first"), "{page}");
    let (_, failed) = get(&format!("{}/runs?outcome=failed", console.url()));
    assert!(failed.contains(runs[1].as_str()) && !failed.contains(runs[0].as_str()), "{failed}");
    assert!(failed.contains("1 runs"), "{failed}");
    let (_, found) = get(&format!("{}/runs?q=job-hostile", console.url()));
    assert!(found.contains(runs[2].as_str()) && !found.contains(runs[0].as_str()), "{found}");
    let (status, _) = get(&format!("{}/runs?outcome=nonsense", console.url()));
    assert_eq!(status, 400);
    let (status, _) = get(&format!("{}/runs?q={}", console.url(), "x".repeat(500)));
    assert_eq!(status, 400, "a query parameter has a bound");
}

#[test]
fn a_run_page_shows_its_timeline_budget_records_and_verified_proof() {
    let (plane, runs) = demo();
    let console = plane.console(None);
    let (status, page) = get(&format!("{}/run/shop/{}", console.url(), runs[0]));
    assert_eq!(status, 200, "{page}");
    // One bar per step and per effect: one step, two effects.
    assert_eq!(page.matches("<rect class=\"bar").count(), 3, "{page}");
    assert!(page.contains("chain verified"), "{page}");
    assert!(page.contains("verified: <code>spiffe://console.test/agent</code>"), "{page}");
    assert!(page.contains("seal leaf"), "{page}");
    assert!(page.contains("inclusion proof of") && page.contains(">verified<"), "{page}");
    assert!(page.contains("tokens") && page.contains("1000"), "budget against the ceiling: {page}");
    // An open run is covered by the heads leaf that holds its head: a prefix.
    let (_, open) = get(&format!("{}/run/shop/{}", console.url(), runs[1]));
    assert!(open.contains("heads leaf") && open.contains("a prefix, not a complete history"), "{open}");
    assert!(open.contains("bar failed"), "the failed effect is drawn as failed: {open}");
    let (status, _) = get(&format!("{}/run/shop/run-not-there", console.url()));
    assert_eq!(status, 404);
    let (status, _) = get(&format!("{}/run/elsewhere/{}", console.url(), runs[0]));
    assert_eq!(status, 404, "a tenant the plane does not name");
}

#[test]
fn agent_supplied_text_renders_as_inert_text() {
    let (plane, runs) = demo();
    let console = plane.console(None);
    let (_, page) = get(&format!("{}/run/shop/{}", console.url(), runs[2]));
    assert!(!page.contains("<script>"), "no script element from a record: {page}");
    assert!(!page.contains("<img src=x"), "no element from a record");
    assert!(page.contains("&lt;script&gt;document.title="), "shown as text: {page}");
    let (_, diff) = get(&format!("{}/diff?a={}&b={}", console.url(), runs[0], runs[2]));
    assert!(!diff.contains("<script>") && diff.contains("&lt;script&gt;"), "{diff}");
}

#[test]
fn a_run_whose_chain_does_not_verify_is_shown_in_red_with_the_finding() {
    let (plane, runs) = demo();
    let rows = journal_core::Store::read_run(plane.store.as_ref(), &plane.tenant, &runs[0]).unwrap().rows;
    let mut bytes = rows[2].bytes.clone();
    let at = bytes.iter().position(|b| *b == b'w').unwrap();
    bytes[at] = b'W';
    plane.store.overwrite_record_bytes(&plane.tenant, &runs[0], rows[2].seq, bytes);
    let console = plane.console(None);
    let (status, page) = get(&format!("{}/run/shop/{}", console.url(), runs[0]));
    assert_eq!(status, 200);
    assert!(page.contains("class=\"bad finding\"") && page.contains("does not verify"), "{page}");
    let (_, list) = get(&format!("{}/runs", console.url()));
    assert!(list.contains("does not verify"), "the list says so too: {list}");
}

#[test]
fn the_diff_marks_the_first_difference_and_the_log_page_proves_consistency() {
    let (plane, runs) = demo();
    let console = plane.console(None);
    let (status, diff) = get(&format!("{}/diff?a={}&b={}", console.url(), runs[0], runs[2]));
    assert_eq!(status, 200, "{diff}");
    assert!(diff.contains("id=\"first-difference\""), "{diff}");
    // As `agentplane diff` compares: their admissions carry different idempotency keys.
    assert!(diff.contains("first difference at position 1"), "{diff}");
    let (_, same) = get(&format!("{}/diff?a={}&b={}", console.url(), runs[0], runs[0]));
    assert!(same.contains("the runs did the same"), "{same}");

    plane.run("job-later", &[("ek:later", Ok("ok"))], false);
    plane.checkpoint();
    let (status, log) = get(&format!("{}/log?from=1&to=4", console.url()));
    assert_eq!(status, 200, "{log}");
    assert!(log.contains("size 4 extends size 1") && log.contains("verified"), "{log}");
    assert!(log.contains("2 signed"), "{log}");
    let (_, wrong) = get(&format!("{}/log?from=5&to=2", console.url()));
    assert!(wrong.contains("class=\"bad\""), "{wrong}");
}

#[test]
fn no_route_accepts_a_write_and_every_page_carries_a_strict_csp() {
    let (plane, runs) = demo();
    let console = plane.console(None);
    let client = reqwest::blocking::Client::new();
    for path in ["/".to_owned(), "/runs".to_owned(), format!("/run/shop/{}", runs[0]), "/log".to_owned()] {
        let url = format!("{}{path}", console.url());
        for method in [reqwest::Method::POST, reqwest::Method::PUT, reqwest::Method::DELETE, reqwest::Method::PATCH] {
            let status = client.request(method.clone(), &url).send().unwrap().status().as_u16();
            assert_eq!(status, 405, "{method} {path}");
        }
        let response = client.get(&url).send().unwrap();
        let csp = response.headers().get("content-security-policy").unwrap().to_str().unwrap().to_owned();
        assert!(csp.contains("default-src 'none'") && !csp.contains("script-src"), "{csp}");
        assert_eq!(response.headers().get("x-content-type-options").unwrap(), "nosniff");
    }
}

#[test]
fn a_token_is_checked_on_every_request_and_required_off_localhost() {
    let (plane, _) = demo();
    let off = console::ConsoleOptions { listen: "0.0.0.0:0".parse().unwrap(), token: None };
    assert!(matches!(console::Console::start(plane.view(), off), Err(console::ConsoleError::TokenRequired { .. })));
    let weak = console::ConsoleOptions { listen: "127.0.0.1:0".parse().unwrap(), token: Some("short".into()) };
    assert!(matches!(console::Console::start(plane.view(), weak), Err(console::ConsoleError::WeakToken { .. })));

    let token = "0123456789abcdef0123";
    let console = plane.console(Some(token));
    let client = reqwest::blocking::Client::new();
    for path in ["/", "/runs", "/log", "/static/console.css"] {
        let url = format!("{}{path}", console.url());
        assert_eq!(client.get(&url).send().unwrap().status().as_u16(), 401, "{path}");
        let wrong = client.get(&url).bearer_auth("0123456789abcdef0124").send().unwrap();
        assert_eq!(wrong.status().as_u16(), 401, "{path}");
        assert_eq!(client.get(&url).bearer_auth(token).send().unwrap().status().as_u16(), 200, "{path}");
    }
    // A browser opens it once with ?token=, then carries the cookie.
    let first = client.get(format!("{}/?token={token}", console.url())).send().unwrap();
    assert_eq!(first.status().as_u16(), 200);
    let cookie = first.headers().get("set-cookie").unwrap().to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    let pair = cookie.split(';').next().unwrap().to_owned();
    let next = client.get(format!("{}/runs", console.url())).header("cookie", pair).send().unwrap();
    assert_eq!(next.status().as_u16(), 200);
}

/// The console beside a writing plane: every page answers while runs are
/// appended and checkpoints signed on the same store.
#[test]
fn pages_load_while_runs_are_appended() {
    let (plane, runs) = demo();
    let console = plane.console(None);
    let url = console.url().to_owned();
    let run = runs[0].clone();
    let reader = std::thread::spawn(move || {
        let mut loaded = 0;
        for _ in 0..20 {
            for path in ["/".to_owned(), "/runs".to_owned(), format!("/run/shop/{run}"), "/log".to_owned()] {
                let (status, page) = get(&format!("{url}{path}"));
                assert_eq!(status, 200, "{path}: {page}");
                loaded += 1;
            }
        }
        loaded
    });
    for n in 0..30 {
        plane.run(&format!("job-live-{n}"), &[("ek:live", Ok("ok"))], n % 3 == 0);
        if n % 10 == 0 {
            plane.checkpoint();
        }
    }
    assert_eq!(reader.join().unwrap(), 80);
    let (_, page) = get(&format!("{}/runs", console.url()));
    assert!(page.contains("33 runs"), "{page}");
}
