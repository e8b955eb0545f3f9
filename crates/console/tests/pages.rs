//! Issue 27: every page of the console over real HTTP on a redb plane:
//! status, content, escaping of agent-supplied text, no write method, the
//! token off localhost, and pages that keep loading while runs are appended.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use std::sync::Arc;

use journal_core::Store;
use journal_core::testkit::TamperAccess;
use witness::{ALG_ED25519, LogKey, SignerKey};

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
    assert!(page.contains("3 runs on this page, newest first"), "{page}");
    // Newest first: the hostile run was admitted last, the first run first.
    let (newest, oldest) = (page.find(runs[2].as_str()).unwrap(), page.find(runs[0].as_str()).unwrap());
    assert!(newest < oldest, "{page}");
    let (_, failed) = get(&format!("{}/runs?outcome=failed", console.url()));
    assert!(failed.contains(runs[1].as_str()) && !failed.contains(runs[0].as_str()), "{failed}");
    assert!(failed.contains("1 runs on this page"), "{failed}");
    let (_, found) = get(&format!("{}/runs?q=job-hostile", console.url()));
    assert!(found.contains(runs[2].as_str()) && !found.contains(runs[0].as_str()), "{found}");
    assert!(found.contains("1 runs found"), "{found}");
    let (_, by_id) = get(&format!("{}/runs?q={}", console.url(), runs[1]));
    assert!(by_id.contains(runs[1].as_str()) && !by_id.contains(runs[2].as_str()), "{by_id}");
    let (_, filtered) = get(&format!("{}/runs?q={}&outcome=succeeded", console.url(), runs[1]));
    assert!(filtered.contains("0 runs found"), "the outcome filter holds in a search: {filtered}");
    let (status, _) = get(&format!("{}/runs?before=12:", console.url()));
    assert_eq!(status, 400, "a cursor the console did not write");
    let (status, _) = get(&format!("{}/runs?before=-1:run-x", console.url()));
    assert_eq!(status, 400);
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

/// R-UX-3 (review 52): a bidirectional override in agent text (a step's
/// output, an effect key) reordered what the page showed after it; HTML
/// escaping leaves it in place. It is shown as its escape, as the CLI shows it.
#[test]
fn a_bidirectional_override_in_agent_text_is_shown_not_obeyed() {
    let plane = Plane::new();
    let run = plane.run("job-bidi", &[("ek:\u{202e}gpj.exe", Ok("report\u{2066}.txt"))], false);
    let console = plane.console(None);
    let (status, page) = get(&format!("{}/run/shop/{run}", console.url()));
    assert_eq!(status, 200, "{page}");
    assert!(!page.contains('\u{202e}') && !page.contains('\u{2066}'), "no override reaches the page");
    assert!(page.contains("ek:\\u{202e}gpj.exe"), "shown as its escape: {page}");
}

/// R-UX-3 (review 83): the page escaped bidirectional overrides and
/// isolates only: an effect key with a zero-width space, a right-to-left
/// mark or a control character (which a browser shows as nothing) read as
/// another key, `charge-card` twice where two effects were charged. Each
/// is shown as its escape, by the rule the CLI escapes by.
#[test]
fn an_invisible_or_reordering_character_in_agent_text_is_shown_as_its_escape() {
    let plane = Plane::new();
    let effects = [("charge-card\u{200b}", Ok("paid\u{200f}-1\u{1b}[2J")), ("charge\u{ad}-card", Ok("ok\u{e0041}"))];
    let run = plane.run("job-hidden", &effects, false);
    let console = plane.console(None);
    let (status, page) = get(&format!("{}/run/shop/{run}", console.url()));
    assert_eq!(status, 200, "{page}");
    let hidden: Vec<char> =
        page.chars().filter(|c| !matches!(c, '\n' | '\t') && witness::text::disguises(*c)).collect();
    assert!(hidden.is_empty(), "no such character reaches the page: {hidden:?}");
    for escaped in ["charge-card\\u{200b}", "paid\\u{200f}-1\\u{1b}[2J", "charge\\u{ad}-card", "ok\\u{e0041}"] {
        assert!(page.contains(escaped), "{escaped} shown as its escape: {page}");
    }
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

/// R-VER-4 (a rolling upgrade): a worker of a newer build appends to a run
/// in a shape this console's build does not read. The run page said "this
/// run's chain does not verify" as a finding in red, and the list "does not
/// verify": the alarm for an altered history, over a record the chain
/// commits to as written. It is build skew, said so with the remedy (which
/// build wrote it), in the warning's colour, on both pages and the export.
#[test]
fn r_ver_4_a_run_a_newer_build_wrote_to_is_build_skew_on_every_page_not_a_chain_that_does_not_verify() {
    let (plane, runs) = demo();
    let run = &runs[1];
    let rows = journal_core::Store::read_run(plane.store.as_ref(), &plane.tenant, run).unwrap().rows;
    let last = rows.last().unwrap().clone();
    let next = last.seq + 1;
    let bytes = String::from_utf8(last.bytes.clone())
        .unwrap()
        .replace("\"version\":\"0.1.0\"}", "\"version\":\"9.9.9\"}")
        .replacen(&format!("\"seq\":{}", last.seq), &format!("\"seq\":{next}"), 1)
        .replacen("\"body\":", "\"priority\":1,\"body\":", 1)
        .into_bytes();
    let hash = journal_core::ChainHash::link(&last.hash, &bytes);
    let row = journal_core::StoredRecord { seq: next, prev_hash: last.hash, bytes, hash, signature: None, ..last };
    plane.store.overwrite_row(&plane.tenant, run, row);
    plane.store.set_runs_head(&plane.tenant, run, journal_core::ExpectedHead { seq: next, hash });
    plane.store.set_moved(&plane.tenant, run, true);
    let console = plane.console(None);
    let (status, page) = get(&format!("{}/run/shop/{run}", console.url()));
    assert_eq!(status, 200, "{page}");
    assert!(!page.contains("does not verify") && !page.contains("bad finding"), "{page}");
    assert!(page.contains("build skew") && page.contains("9.9.9"), "the remedy names the build: {page}");
    let (_, list) = get(&format!("{}/runs", console.url()));
    assert!(!list.contains("does not verify") && list.contains("build skew"), "{list}");
    let (status, export) = get(&format!("{}/run/shop/{run}/export", console.url()));
    assert_ne!(status, 200, "{export}");
    assert!(!export.contains("does not verify") && export.contains("build skew"), "{export}");
    // The audit of this plane by this build: build skew only (its exit 3),
    // kept for the plane page, is not shown as the alarm's red.
    let head = journal_core::LogView::open(plane.store.as_ref(), &plane.tenant).unwrap().head().unwrap().tree;
    let verdict = console::last_audit::LastAudit {
        format: console::last_audit::LAST_AUDIT_FORMAT.to_owned(),
        at: journal_core::At::from_unix_millis(1_800_000_000_000).unwrap().to_string(),
        command: "audit".into(),
        tenant: "shop".into(),
        origin: ORIGIN.into(),
        verdict: console::last_audit::verdict_for(1, 0).into(),
        findings: 1,
        classes: vec!["build_skew".into()],
        not_checked: vec![],
        anchors: 1,
        log_size: head.size,
        log_root: head.root.to_string(),
    };
    console::last_audit::record(plane.dir.path(), &verdict).unwrap();
    let (_, page) = get(console.url());
    assert!(page.contains("class=\"warn\">findings") && page.contains("(build_skew)"), "{page}");
    let verdict = console::last_audit::LastAudit { classes: vec!["build_skew".into(), "tamper".into()], ..verdict };
    console::last_audit::record(plane.dir.path(), &verdict).unwrap();
    let (_, page) = get(console.url());
    assert!(page.contains("class=\"bad\">findings"), "a tamper finding beside it is the alarm: {page}");
}

#[test]
fn the_diff_marks_the_first_difference_and_the_log_page_proves_consistency() {
    let (plane, runs) = demo();
    let console = plane.console(None);
    let (status, diff) = get(&format!("{}/diff?a={}&b={}", console.url(), runs[0], runs[2]));
    assert_eq!(status, 200, "{diff}");
    assert!(diff.contains("id=\"first-difference\""), "{diff}");
    // Their first effects answered differently; their admissions differ
    // only in the idempotency key, which names a run, not what it did.
    assert!(diff.contains("first difference at position"), "{diff}");
    assert!(!diff.contains("first difference at position 1<"), "{diff}");
    let (_, same) = get(&format!("{}/diff?a={}&b={}", console.url(), runs[0], runs[0]));
    assert!(same.contains("the runs did the same"), "{same}");
    // The same job under another key did the same, as `agentplane diff`
    // says (journal_core::compare serves both).
    let again = plane.run("job-ok-again", &[("ek:search", Ok("3 hits")), ("ek:summary", Ok("done"))], false);
    let (_, rerun) = get(&format!("{}/diff?a={}&b={}", console.url(), runs[0], again));
    assert!(rerun.contains("the runs did the same"), "{rerun}");

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
    let off = console::ConsoleOptions { listen: "0.0.0.0:0".parse().unwrap(), token: None, ..Default::default() };
    assert!(matches!(console::Console::start(plane.view(), off), Err(console::ConsoleError::TokenRequired { .. })));
    let weak = console::ConsoleOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        token: Some("short".into()),
        ..Default::default()
    };
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
    // A browser opens it once with ?token=, gets the cookie and is sent to
    // the same page without the token (R-OPS-1: the secret kept out of its
    // address bar and history), then carries the cookie.
    let browser = reqwest::blocking::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let first = browser.get(format!("{}/runs?outcome=succeeded&token={token}", console.url())).send().unwrap();
    assert_eq!(first.status().as_u16(), 303);
    assert_eq!(first.headers().get("location").unwrap(), "/runs?outcome=succeeded");
    let wrong = browser.get(format!("{}//evil.example/?token={token}", console.url())).send().unwrap();
    assert_eq!(wrong.headers().get("location").map(|l| l.to_str().unwrap()), Some("/"), "never another host");
    // `/\evil.example` is `//evil.example` to a browser (review 36); a client
    // library would rewrite the backslash, so the request is written by hand.
    let address = console.url().trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    use std::io::{Read as _, Write as _};
    write!(stream, "GET /\\evil.example/?token={token} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let location =
        answer.lines().find_map(|line| line.to_ascii_lowercase().strip_prefix("location: ").map(str::to_owned));
    assert_eq!(location.as_deref(), Some("/"), "never another host: {answer}");
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
    assert!(page.contains("33 runs on this page"), "{page}");
}

/// Issue 27: the runs page pages through the store's admission order from a
/// cursor: every run once, newest first, filtered pages too.
#[test]
fn the_runs_page_pages_newest_first_from_a_cursor() {
    let plane = Plane::new();
    let mut admitted = Vec::new();
    for n in 0..120 {
        admitted.push(plane.run(&format!("job-{n:03}"), &[("ek:work", Ok("ok"))], n % 4 == 0));
    }
    let console = plane.console(None);
    let listed = |first: String| {
        let mut seen: Vec<String> = Vec::new();
        let mut next = Some(first);
        let mut pages = 0;
        while let Some(path) = next.take() {
            let (status, page) = get(&format!("{}{}", console.url(), path.replace("&amp;", "&")));
            assert_eq!(status, 200, "{page}");
            pages += 1;
            for run in page.split("href=\"/run/shop/").skip(1) {
                seen.push(run.split('"').next().unwrap().to_owned());
            }
            next = page.split("rel=\"next\" href=\"").nth(1).map(|rest| rest.split('"').next().unwrap().to_owned());
        }
        (seen, pages)
    };
    let (seen, pages) = listed("/runs".to_owned());
    assert_eq!(pages, 3, "50 + 50 + 20");
    let mut admissions =
        journal_core::Store::admissions(plane.store.as_ref(), &plane.tenant, None, None, 1000).unwrap();
    assert_eq!(admissions.len(), 120);
    let newest_first: Vec<String> = admissions.drain(..).map(|a| a.run.to_string()).collect();
    assert_eq!(seen, newest_first, "every run once, newest first");
    assert_eq!(seen.last().unwrap(), admitted[0].as_str(), "the first run admitted is listed last");
    let (failed, pages) = listed("/runs?outcome=failed".to_owned());
    assert_eq!((failed.len(), pages), (30, 1), "{failed:?}");
    let expected: Vec<String> = newest_first
        .iter()
        .filter(|run| admitted.iter().position(|a| a.as_str() == run.as_str()).unwrap() % 4 == 0)
        .cloned()
        .collect();
    assert_eq!(failed, expected);
}

/// Issue 27: the run page links its export, served as a download that
/// verifies offline with the plane's log key (a sealed run with its seal, an
/// open run with the heads leaf holding its head).
#[test]
fn the_run_page_links_an_export_that_verifies_offline() {
    let (plane, runs) = demo();
    let console = plane.console(None);
    let upcasters = journal_core::Upcasters::builtin();
    let check = journal_core::ChainCheck { upcasters: &upcasters, verifier: None, options: Default::default() };
    for (run, sealed) in [(&runs[0], true), (&runs[1], false)] {
        let (_, page) = get(&format!("{}/run/shop/{run}", console.url()));
        let link = format!("href=\"/run/shop/{run}/export\"");
        assert!(page.contains(&link), "the link is on the page: {page}");
        let response = reqwest::blocking::get(format!("{}/run/shop/{run}/export", console.url())).unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let disposition = response.headers().get("content-disposition").unwrap().to_str().unwrap().to_owned();
        assert_eq!(disposition, format!("attachment; filename=\"{run}.export.jsonl\""));
        let text = response.text().unwrap();
        let verified = journal_core::export::verify_export(&text, &[plane.key.verifier_key()], check).unwrap();
        assert_eq!(&verified.run, run);
        assert_eq!(
            matches!(verified.covers, journal_core::export::ExportCovers::Seal),
            sealed,
            "{:?}",
            verified.covers
        );
        let other_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
        let refused = journal_core::export::verify_export(&text, &[other_key.verifier_key()], check);
        assert!(
            matches!(refused, Err(journal_core::export::ExportError::Checkpoint(_))),
            "it is the plane's key that verifies it: {refused:?}"
        );
    }
    // A run sealed after the last signed checkpoint is not covered yet: the
    // console never signs, and says what does.
    let late = plane.run("job-late", &[("ek:late", Ok("ok"))], false);
    let response = reqwest::blocking::get(format!("{}/run/shop/{late}/export", console.url())).unwrap();
    assert_eq!(response.status().as_u16(), 409);
    assert!(response.text().unwrap().contains("agentplane checkpoint"));
    let (status, _) = get(&format!("{}/run/shop/run-not-there/export", console.url()));
    assert_eq!(status, 404);
}

/// R-OPS-1 (every input has a size bound; review 79's note): a run whose
/// records alone are past the 64 MiB the console serves as an export is
/// refused (413) before the export is built, the figure its records' bytes;
/// it was refused only after the whole export text was built (about twice
/// the records' bytes), naming that text's length.
#[test]
fn r_ops_1_a_run_too_large_to_export_is_refused_before_its_export_is_built() {
    let plane = Plane::new();
    let output = "a".repeat(14 << 20);
    let effects: Vec<(String, Result<&str, &str>)> =
        (0..5).map(|n| (format!("ek:large-{n}"), Ok(output.as_str()))).collect();
    let effects: Vec<(&str, Result<&str, &str>)> = effects.iter().map(|(key, out)| (key.as_str(), *out)).collect();
    let run = plane.run("job-large", &effects, false);
    plane.checkpoint();
    let rows = journal_core::Store::read_run(plane.store.as_ref(), &plane.tenant, &run).unwrap().rows;
    let record_bytes: usize = rows.iter().map(|row| row.bytes.len()).sum();
    assert!(record_bytes > 64 << 20, "{record_bytes}");
    let console = plane.console(None);
    let response = reqwest::blocking::get(format!("{}/run/shop/{run}/export", console.url())).unwrap();
    assert_eq!(response.status().as_u16(), 413);
    let said = response.text().unwrap();
    assert!(said.contains(&format!("at least {record_bytes} bytes")), "{said}");
    assert!(said.contains(&format!("agentplane export {run} -o FILE")), "{said}");
}

/// R-OPS-1, R-EXP-1 (review 81): an open run's export carries its records
/// up to the head the last signed checkpoint covers, not the records
/// appended since. A run that grew past 64 MiB after that checkpoint, whose
/// export is a few kilobytes, is served; the early bound counted every
/// record the run has now and refused it (413, "at least 70 MiB").
#[test]
fn r_ops_1_an_open_run_grown_past_the_bound_after_its_checkpoint_still_exports() {
    use journal_core::runtime::EffectOutput;
    use journal_core::{Counters, EffectResult};
    let plane = Plane::new();
    let mut run = plane.started("job-grows");
    plane.checkpoint();
    let covered = journal_core::Store::read_run(plane.store.as_ref(), &plane.tenant, run.run()).unwrap().rows.len();
    let output = "a".repeat(14 << 20);
    for n in 0..5 {
        let result = EffectResult::Ok { output: output.clone() };
        run.effect(&format!("ek:large-{n}"), "work", || EffectOutput { result, charged: Counters::default() }).unwrap();
    }
    let id = run.run().clone();
    let rows = journal_core::Store::read_run(plane.store.as_ref(), &plane.tenant, &id).unwrap().rows;
    assert!(rows.iter().map(|row| row.bytes.len()).sum::<usize>() > 64 << 20, "the run grew past the bound");
    let console = plane.console(None);
    let response = reqwest::blocking::get(format!("{}/run/shop/{id}/export", console.url())).unwrap();
    let status = response.status().as_u16();
    let text = response.text().unwrap();
    assert_eq!(status, 200, "{}", &text[..text.len().min(400)]);
    let upcasters = journal_core::Upcasters::builtin();
    let check = journal_core::ChainCheck { upcasters: &upcasters, verifier: None, options: Default::default() };
    let verified = journal_core::export::verify_export(&text, &[plane.key.verifier_key()], check).unwrap();
    assert_eq!(verified.records, covered as u64, "the records the checkpoint covers, no more");
}

/// Issue 27: the plane page shows the last audit's verdict left in the
/// plane's folder, and whether the log is still that tree or extends it.
#[test]
fn the_plane_page_shows_the_last_audit_verdict_against_the_current_log() {
    let (plane, _) = demo();
    let console = plane.console(None);
    let (_, page) = get(console.url());
    assert!(page.contains("no audit has been run here yet"), "{page}");
    let head = journal_core::LogView::open(plane.store.as_ref(), &plane.tenant).unwrap().head().unwrap().tree;
    let at = journal_core::At::from_unix_millis(1_800_000_000_000).unwrap();
    let verdict = |root: String| console::last_audit::LastAudit {
        format: console::last_audit::LAST_AUDIT_FORMAT.to_owned(),
        at: at.to_string(),
        command: "audit".into(),
        tenant: "shop".into(),
        origin: ORIGIN.into(),
        verdict: console::last_audit::verdict_for(0, 0).into(),
        findings: 0,
        classes: vec![],
        not_checked: vec![],
        anchors: 1,
        log_size: head.size,
        log_root: root,
    };
    console::last_audit::record(plane.dir.path(), &verdict(head.root.to_string())).unwrap();
    let (_, page) = get(console.url());
    assert!(page.contains("agentplane audit</code> at 2027-01-15T08:00:00.000Z"), "{page}");
    assert!(page.contains("class=\"good\">clean"), "{page}");
    assert!(page.contains(&format!("it covered the log of {} leaves", head.size)), "{page}");
    assert!(page.contains("the log is still that tree"), "{page}");
    plane.run("job-after", &[("ek:after", Ok("ok"))], false);
    let (_, page) = get(console.url());
    assert!(page.contains("the log extends it: 1 leaves since"), "{page}");
    console::last_audit::record(plane.dir.path(), &verdict("00".repeat(32))).unwrap();
    let (_, page) = get(console.url());
    assert!(page.contains("the log does not extend it"), "{page}");
    std::fs::write(console::last_audit::path_for(plane.dir.path(), "shop"), "{\"format\":1}").unwrap();
    let (_, page) = get(console.url());
    assert!(
        page.contains("the last audit&#39;s verdict is unreadable") || page.contains("verdict is unreadable"),
        "{page}"
    );
}

/// R-STORE-4 (review 69): an audit of tenant `shop` held to another log's
/// origin (`agentplane --tenant shop audit --log-key` of another tenant)
/// left a verdict the plane page showed as shop's, "clean" and "the log is
/// still that tree" when its size and root matched (an empty log does under
/// any origin). A verdict of another origin is said to be one, not shown.
#[test]
fn r_store_4_a_verdict_of_another_origin_is_not_shown_as_the_tenants() {
    let (plane, _) = demo();
    let console = plane.console(None);
    let head = journal_core::LogView::open(plane.store.as_ref(), &plane.tenant).unwrap().head().unwrap().tree;
    let verdict = console::last_audit::LastAudit {
        format: console::last_audit::LAST_AUDIT_FORMAT.to_owned(),
        at: journal_core::At::from_unix_millis(1_800_000_000_000).unwrap().to_string(),
        command: "audit".into(),
        tenant: "shop".into(),
        origin: "console.test/another-tenant".into(),
        verdict: console::last_audit::verdict_for(0, 0).into(),
        findings: 0,
        classes: vec![],
        not_checked: vec![],
        anchors: 1,
        log_size: head.size,
        log_root: head.root.to_string(),
    };
    console::last_audit::record(plane.dir.path(), &verdict).unwrap();
    let (_, page) = get(console.url());
    assert!(!page.contains("class=\"good\">clean"), "{page}");
    assert!(!page.contains("the log is still that tree"), "{page}");
    assert!(page.contains("the last audit was of the log"), "{page}");
    assert!(page.contains("console.test/another-tenant"), "{page}");
}

/// Ids may hold a `/` (`A-Z a-z 0-9 - _ . : /`): a run of tenant
/// `acme/eu` named `batch/7` is linked from the runs page with its ids
/// percent-encoded as path segments, and its page and export answer.
#[test]
fn ids_holding_a_slash_are_linked_as_one_path_segment_each() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(store_redb::RedbStore::create(&dir.path().join("plane.redb")).unwrap());
    let tenant = journal_core::TenantId::new("acme/eu").unwrap();
    let origin = journal_core::Origin::new("console.test/plane/acme-eu").unwrap();
    let run = journal_core::RunId::new("batch/7").unwrap();
    let journal = journal_core::Journal::new(store.as_ref(), &tenant, &origin);
    journal_core::testkit::sample_run(&journal, &run, journal_core::Outcome::Succeeded).unwrap();
    let console = console_on(&store, tenant, origin);
    let (status, page) = get(&format!("{}/runs?tenant=acme%2Feu", console.url()));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(r#"href="/run/acme%2Feu/batch%2F7""#), "{page}");
    let (status, page) = get(&format!("{}/run/acme%2Feu/batch%2F7", console.url()));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("batch/7") && page.contains(r#"href="/run/acme%2Feu/batch%2F7/export""#), "{page}");
    let (status, _) = get(&format!("{}/run/acme%2Feu/batch%2F7/export", console.url()));
    assert_ne!(status, 404);
}

/// R-UX-3: a run id `.` or `..` is a dot segment that a browser resolves
/// away (`/run/t/..` becomes `/run/`, encoded or not) before it asks: such a
/// run is linked by query, and that address serves its page and export.
#[test]
fn a_run_whose_id_is_a_dot_segment_is_linked_by_query() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(store_redb::RedbStore::create(&dir.path().join("plane.redb")).unwrap());
    let tenant = journal_core::TenantId::new("acme").unwrap();
    let origin = journal_core::Origin::new("console.test/plane/acme").unwrap();
    let journal = journal_core::Journal::new(store.as_ref(), &tenant, &origin);
    for id in ["..", "."] {
        let run = journal_core::RunId::new(id).unwrap();
        journal_core::testkit::sample_run(&journal, &run, journal_core::Outcome::Succeeded).unwrap();
    }
    let console = console_on(&store, tenant, origin);
    let (status, page) = get(&format!("{}/runs?tenant=acme", console.url()));
    assert_eq!(status, 200, "{page}");
    for id in ["..", "."] {
        let href = format!("/run?tenant=acme&amp;run={id}");
        assert!(page.contains(&format!(r#"href="{href}""#)), "{page}");
        let (status, run_page) = get(&format!("{}/run?tenant=acme&run={id}", console.url()));
        assert_eq!(status, 200, "{run_page}");
        assert!(run_page.contains(&format!(r#"href="/run/export?tenant=acme&amp;run={id}""#)), "{run_page}");
        let (status, export) = get(&format!("{}/run/export?tenant=acme&run={id}", console.url()));
        // (This view has no log key, so the export handler answers that;
        // what matters here is that the address reaches it.)
        assert!(status != 404 && status != 400, "{status}: {export}");
    }
    let (status, _) = get(&format!("{}/run?tenant=acme", console.url()));
    assert_eq!(status, 400, "a query without the run is the console's error page");
}

/// R-UX-3: a query a page cannot read (`from` that is not a number, a
/// parameter given twice) gets the console's own error page
/// (400, HTML, the security headers), never the framework's plain text.
#[test]
fn a_query_a_page_cannot_read_gets_the_console_s_error_page() {
    let (plane, _) = demo();
    let console = plane.console(None);
    for path in ["/log?from=abc", "/log?from=1&from=2", "/runs?tenant=a&tenant=b"] {
        let response = reqwest::blocking::get(format!("{}{path}", console.url())).unwrap();
        assert_eq!(response.status().as_u16(), 400, "{path}");
        let csp = response.headers().get("content-security-policy").map(|v| v.to_str().unwrap().to_owned());
        let kind = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned());
        let page = response.text().unwrap();
        assert!(kind.is_some_and(|kind| kind.starts_with("text/html")), "{path}: {page}");
        assert!(csp.is_some_and(|csp| csp.contains("default-src 'none'")), "{path}");
        assert!(page.contains("cannot read its query"), "{path}: {page}");
    }
}

/// A console on `store` showing one tenant's log, with no key: what the
/// id-addressing tests need.
fn console_on(
    store: &Arc<store_redb::RedbStore>,
    tenant: journal_core::TenantId,
    origin: journal_core::Origin,
) -> console::Console {
    let view = console::PlaneView {
        store: Arc::clone(store) as Arc<dyn journal_core::Store>,
        tenants: vec![console::TenantLog { tenant, origin }],
        record_verifier: None,
        log_keys: Vec::new(),
        witnesses: Vec::new(),
        upcasters: journal_core::Upcasters::builtin(),
        folder: None,
    };
    let options = console::ConsoleOptions { listen: "127.0.0.1:0".parse().unwrap(), token: None, ..Default::default() };
    console::Console::start(view, options).unwrap()
}

/// R-OPS-1, a console beside a busy plane: the plane page opens its view of
/// the log, and before it reads the last audit's verdict the plane seals a
/// run and an audit of the larger log leaves its verdict. The log did not
/// shrink: the page must not say "it is not the tree audited". (On main it
/// read the verdict after the view, and said the log is smaller now.)
#[test]
fn r_ops_1_a_verdict_left_while_the_plane_page_is_drawn_is_no_false_alarm() {
    use journal_core::testkit_faults::{RoutedStore, StoreCall};
    use std::sync::atomic::{AtomicBool, Ordering};
    let (plane, _) = demo();
    let plane: &'static Plane = Box::leak(Box::new(plane));
    let verdict_of = |head: tlog::Tree| console::last_audit::LastAudit {
        format: console::last_audit::LAST_AUDIT_FORMAT.to_owned(),
        at: journal_core::At::from_unix_millis(1_800_000_000_000).unwrap().to_string(),
        command: "verify".into(),
        tenant: "shop".into(),
        origin: ORIGIN.into(),
        verdict: console::last_audit::verdict_for(0, 0).into(),
        findings: 0,
        classes: vec![],
        not_checked: vec![],
        anchors: 1,
        log_size: head.size,
        log_root: head.root.to_string(),
    };
    let head = |store: &dyn Store| journal_core::LogView::open(store, &plane.tenant).unwrap().head().unwrap().tree;
    console::last_audit::record(plane.dir.path(), &verdict_of(head(plane.store.as_ref()))).unwrap();
    let (drawing, moved) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let store: Arc<dyn Store> = {
        let (drawing, moved) = (Arc::clone(&drawing), Arc::clone(&moved));
        let inner = Arc::clone(&plane.store) as Arc<dyn Store>;
        Arc::new(RoutedStore::new(Box::new(move |call| {
            // The page's first read after its counters: the plane moves, the audit ends.
            if call == StoreCall::ReadLogNodes && drawing.load(Ordering::SeqCst) && !moved.swap(true, Ordering::SeqCst)
            {
                plane.run("job-meanwhile", &[("ek:meanwhile", Ok("ok"))], false);
                console::last_audit::record(plane.dir.path(), &verdict_of(head(inner.as_ref()))).unwrap();
            }
            Arc::clone(&inner)
        })))
    };
    let console = plane.console_over(store);
    drawing.store(true, Ordering::SeqCst);
    let (_, page) = get(console.url());
    assert!(moved.load(Ordering::SeqCst), "the plane moved while the page was drawn");
    assert!(!page.contains("it is not the tree audited"), "a false alarm on a healthy plane: {page}");
    assert!(!page.contains("does not extend"), "{page}");
}

/// R-OPS-1, R-COVER-2, a console beside a busy plane: a run's page reads
/// the open run's chain, then the log; in between its worker appends a
/// record and a checkpoint puts a heads leaf holding that new head in the
/// log. The leaf holds a record the chain read a moment before did not
/// have yet: nothing was cut, and the page must not say the leaf "does not
/// hold this chain". (On main it did: a false tamper mark.)
#[test]
fn r_cover_2_a_run_page_drawn_while_its_run_moves_and_is_covered_is_no_false_alarm() {
    use journal_core::testkit_faults::{RoutedStore, StoreCall};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (plane, _) = demo();
    let plane: &'static Plane = Box::leak(Box::new(plane));
    let request = journal_core::AdmitRequest {
        idempotency_key: "job-open".into(),
        plan: vec!["work".into()],
        budget: journal_core::Budget::default(),
    };
    let journal_core::Admission::New(handle) = plane.runtime.admit(&plane.tenant, request).unwrap() else {
        panic!("a new run")
    };
    let run = handle.run().clone();
    plane.checkpoint();
    let handle = Arc::new(Mutex::new(Some(handle)));
    let (read, moved) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let store: Arc<dyn Store> = {
        let (read, moved, handle) = (Arc::clone(&read), Arc::clone(&moved), Arc::clone(&handle));
        let inner = Arc::clone(&plane.store) as Arc<dyn Store>;
        Arc::new(RoutedStore::new(Box::new(move |call| {
            match call {
                StoreCall::ReadRun => read.store(true, Ordering::SeqCst),
                // The page's view of the log, after it read the chain.
                StoreCall::LogCounters if read.load(Ordering::SeqCst) && !moved.swap(true, Ordering::SeqCst) => {
                    handle.lock().unwrap().as_mut().unwrap().start_step("work").unwrap();
                    plane.checkpoint();
                }
                _ => {}
            }
            Arc::clone(&inner)
        })))
    };
    let console = plane.console_over(store);
    let (status, page) = get(&format!("{}/run/shop/{run}", console.url()));
    assert_eq!(status, 200, "{page}");
    assert!(moved.load(Ordering::SeqCst), "the run moved and was covered while its page was drawn");
    assert!(!page.contains("does not hold this chain"), "a false alarm on a healthy plane: {page}");
    handle.lock().unwrap().take().unwrap().succeed("done").unwrap();
}

/// R-OPS-1, R-UX-3: a peer that reaches the console (bound off localhost,
/// any peer may connect before its token is read) sent half a request
/// header, or nothing, and the console held the connection forever:
/// `axum::serve` sets no timer, so hyper's header timeout never ran, and
/// enough such connections use up the console's descriptors, after which it
/// serves no one. A connection whose request header has not arrived within
/// [`console::HEADER_TIMEOUT`] is now closed, and the console serves on.
#[test]
fn r_ops_1_a_client_that_never_finishes_its_request_header_is_disconnected() {
    use std::io::{Read as _, Write as _};
    let (plane, _) = demo();
    let token = "0123456789abcdef0123";
    // A short timeout keeps the test quick; the default is HEADER_TIMEOUT.
    let options = console::ConsoleOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        token: Some(token.into()),
        header_timeout: std::time::Duration::from_millis(300),
        ..Default::default()
    };
    let console = console::Console::start(plane.view(), options).unwrap();
    let address = console.url().trim_start_matches("http://").to_owned();
    let mut partial = std::net::TcpStream::connect(&address).unwrap();
    partial.write_all(b"GET / HTTP/1.1\r\nHost: loc").unwrap();
    let silent = std::net::TcpStream::connect(&address).unwrap();
    for mut stream in [partial, silent] {
        // Without the timeout the read waits on a connection never closed
        // and fails when this guard, far past the console's, runs out.
        stream.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
        let mut answer = Vec::new();
        let read = stream.read_to_end(&mut answer);
        assert!(read.is_ok(), "the console closes it: {read:?}");
    }
    let served = reqwest::blocking::Client::new().get(console.url()).bearer_auth(token).send().unwrap();
    assert_eq!(served.status().as_u16(), 200);
}

/// R-OPS-1 (noticed by review 20): the console served any number of
/// connections at once, so a peer opening connections faster than the
/// header timeout closes them could use up its descriptors. At most
/// `max_connections` are served; one past it is closed at once, and once
/// the stalled ones are gone the console serves again.
#[test]
fn r_ops_1_a_connection_past_the_cap_is_closed_at_once() {
    use std::io::{Read as _, Write as _};
    let (plane, _) = demo();
    let options = console::ConsoleOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        header_timeout: std::time::Duration::from_secs(60),
        max_connections: 2,
        ..Default::default()
    };
    let console = console::Console::start(plane.view(), options).unwrap();
    let address = console.url().trim_start_matches("http://").to_owned();
    // Two stalled connections, each known to be served (its first request answered).
    let mut stalled = Vec::new();
    for _ in 0..2 {
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        stream.write_all(b"GET /static/console.css HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        let mut first = [0u8; 12];
        stream.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"HTTP/1.1 200");
        stalled.push(stream);
    }
    let mut third = std::net::TcpStream::connect(&address).unwrap();
    third.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    let _ = third.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let mut answer = Vec::new();
    let read = third.read_to_end(&mut answer);
    let closed = match &read {
        Ok(_) => answer.is_empty(),
        // Closed with the request unread: a reset.
        Err(err) => err.kind() == std::io::ErrorKind::ConnectionReset,
    };
    assert!(closed, "a connection past the cap is closed unanswered: {read:?}, {} bytes answered", answer.len());

    drop(stalled);
    // The stalled connections' tasks end as their sockets close; a request
    // may still meet the cap for an instant, so it is asked again until served.
    let client = reqwest::blocking::Client::new();
    let served = (0..1000).find_map(|_| client.get(console.url()).send().ok().filter(|r| r.status().as_u16() == 200));
    assert!(served.is_some(), "the console serves again once the stalled connections are gone");
}

/// R-AUD-8, R-OPS-1, a console beside a busy plane: the runs page filtered
/// by outcome lists the exhausted runs from the store's index, and before it
/// reads the listed run's chain the operator raises its ceiling and resumes
/// it, and it succeeds. The index moved with the chain (it lists the run as
/// succeeded now): nothing behind the plane wrote it, and the page must not
/// say the store lists it "NOT as listed". (On main it did: a row marked bad
/// on a healthy plane.) A run whose index still contradicts its chain when
/// read is still named (`forged_store.rs`).
#[test]
fn r_aud_8_a_run_that_moves_on_while_the_runs_page_by_outcome_is_drawn_is_no_false_alarm() {
    use journal_core::testkit_faults::{RoutedStore, StoreCall};
    use journal_core::{Admission, AdmitRequest, Budget, Counters, Dimension, EffectResult};
    use std::sync::atomic::{AtomicBool, Ordering};
    let (plane, _) = demo();
    let plane: &'static Plane = Box::leak(Box::new(plane));
    let budget = Budget { tokens: Some(50), ..Budget::default() };
    let request = AdmitRequest { idempotency_key: "job-exhausted".into(), plan: vec!["work".into()], budget };
    let Admission::New(mut handle) = plane.runtime.admit(&plane.tenant, request).unwrap() else { panic!("a new run") };
    let charged = || journal_core::runtime::EffectOutput {
        result: EffectResult::Ok { output: "ok".into() },
        charged: Counters { tokens: 40, ..Counters::default() },
    };
    handle.start_step("work").unwrap();
    handle.effect("ek:a", "work", charged).unwrap();
    let spent = handle.effect("ek:b", "work", charged);
    assert!(
        matches!(
            spent,
            Err(journal_core::RuntimeError::Stopped { status: journal_core::RunStatus::Exhausted { .. }, .. })
        ),
        "the budget is spent: {spent:?}"
    );
    let run = handle.run().clone();
    drop(handle);
    let before = plane.console(None);
    let (status, listed) = get(&format!("{}/runs?outcome=exhausted", before.url()));
    assert_eq!(status, 200, "{listed}");
    assert!(listed.contains(run.as_str()), "the run is exhausted: {listed}");
    let (listing, moved) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let store: Arc<dyn Store> = {
        let (listing, moved, run) = (Arc::clone(&listing), Arc::clone(&moved), run.clone());
        let inner = Arc::clone(&plane.store) as Arc<dyn Store>;
        Arc::new(RoutedStore::new(Box::new(move |call| {
            match call {
                StoreCall::Admissions => listing.store(true, Ordering::SeqCst),
                // The page reads the chain of the run it listed: the run moved on meanwhile.
                StoreCall::ReadRun if listing.load(Ordering::SeqCst) && !moved.swap(true, Ordering::SeqCst) => {
                    plane.runtime.raise_ceiling(&plane.tenant, &run, Dimension::Tokens, Some(500)).unwrap();
                    let mut resumed = plane.runtime.resume(&plane.tenant, &run).unwrap();
                    resumed.finish_step("work").unwrap();
                    resumed.succeed("done").unwrap();
                }
                _ => {}
            }
            Arc::clone(&inner)
        })))
    };
    let console = plane.console_over(store);
    let (status, page) = get(&format!("{}/runs?outcome=exhausted", console.url()));
    assert_eq!(status, 200, "{page}");
    assert!(moved.load(Ordering::SeqCst), "the run moved on while the page was drawn");
    assert!(!page.contains("NOT as listed"), "a false alarm on a healthy plane: {page}");
}

/// R-OPS-1 (review 36): a run page shows at most 5,000 records, and its
/// timeline drew a bar for every step and effect of the whole run: a run
/// of a million records (anyone who can write the store can make one) was
/// a page of a million SVG rows, each effect's end matched by a scan of
/// every bar before it. The timeline draws the records the page shows.
#[test]
fn r_ops_1_a_run_page_draws_the_timeline_of_the_records_it_shows_only() {
    use journal_core::runtime::EffectOutput;
    use journal_core::{Admission, AdmitRequest, Counters, EffectResult, MemoryStore, RuntimeBuilder};
    let store = Arc::new(MemoryStore::new());
    let plane = Plane::new();
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(plane.tenant.clone(), plane.origin.clone(), None)
        .build()
        .unwrap();
    let request =
        AdmitRequest { idempotency_key: "job-long".into(), plan: vec!["work".into()], budget: Default::default() };
    let Admission::New(mut run) = runtime.admit(&plane.tenant, request).unwrap() else { panic!("a new run") };
    run.start_step("work").unwrap();
    let effects = 2_600;
    for i in 0..effects {
        let output = || EffectOutput { result: EffectResult::Ok { output: "ok".into() }, charged: Counters::default() };
        run.effect(&format!("ek:{i}"), "work", output).unwrap();
    }
    let id = run.run().clone();
    let console = plane.console_over(store);
    let (status, page) = get(&format!("{}/run/shop/{id}", console.url()));
    assert_eq!(status, 200, "{}", &page[..page.len().min(2_000)]);
    assert!(page.contains("the first 5000 records of"), "the page says it is cut");
    // Each bar begins with a record of the page: at most one a record pair
    // (an effect's start and end) past the step's.
    let bars = page.matches("<rect class=\"bar").count();
    assert!(bars <= 1 + 5_000 / 2, "{bars} bars for the 5,000 records shown, of a run of {effects} effects");
}

/// R-LOG-2, issue 25 (reads flat however old the plane): a plane keeps a
/// checkpoint row a signing and a cosigned row a witnessing round, so after
/// a year of rounds every page that read all of them (the run page and the
/// export for a run's cosigned inclusion, the plane page for the latest
/// cosigned checkpoint, the log page for its chart) read tens of thousands
/// of rows per load. Each now reads the newest rows only
/// (`Store::newest_checkpoints`), and the pages still show a run's cosigned
/// inclusion and the log's checkpoints.
#[test]
fn r_log_2_no_page_reads_every_kept_checkpoint_row() {
    use journal_core::testkit_faults::{RoutedStore, StoreCall};
    use std::sync::Mutex;
    let (plane, runs) = demo();
    let last = plane.store.last_signed_checkpoint(&plane.tenant).unwrap().unwrap();
    plane.store.record_cosigned_checkpoint(&plane.tenant, last).unwrap();
    let full_reads = Arc::new(Mutex::new(Vec::new()));
    let store: Arc<dyn Store> = {
        let (full_reads, inner) = (Arc::clone(&full_reads), Arc::clone(&plane.store) as Arc<dyn Store>);
        Arc::new(RoutedStore::new(Box::new(move |call| {
            if matches!(call, StoreCall::SignedCheckpoints | StoreCall::CosignedCheckpoints) {
                full_reads.lock().unwrap().push(call);
            }
            Arc::clone(&inner)
        })))
    };
    let console = plane.console_over(store);
    let (sealed, open) = (&runs[0], &runs[1]);
    let pages = [
        String::new(),
        "/runs?tenant=shop".into(),
        format!("/run/shop/{sealed}"),
        format!("/run/shop/{sealed}/export"),
        format!("/run/shop/{open}"),
        format!("/run/shop/{open}/export"),
        "/log?tenant=shop".into(),
    ];
    for page in &pages {
        let (status, body) = get(&format!("{}{page}", console.url()));
        assert_eq!(status, 200, "{page}: {body}");
        if page == &format!("/run/shop/{sealed}") {
            assert!(body.contains("cosigned"), "the run's cosigned inclusion is still shown: {body}");
        }
        if page.starts_with("/log") {
            assert!(body.contains("signed checkpoint rows kept read"), "{body}");
        }
    }
    assert_eq!(*full_reads.lock().unwrap(), Vec::<StoreCall>::new(), "no page reads every kept row");
}

/// A run of `effects` effects of one step, each answering "same" but the
/// last, which answers `last`; no budget, failed at the end (review 58).
fn long_run(plane: &Plane, key: &str, effects: usize, last: &str) -> journal_core::RunId {
    use journal_core::runtime::EffectOutput;
    use journal_core::{Admission, AdmitRequest, Budget, Counters, EffectResult};
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget: Budget::default() };
    let Admission::New(mut run) = plane.runtime.admit(&plane.tenant, request).unwrap() else { panic!("a new run") };
    run.start_step("work").unwrap();
    for i in 0..effects {
        let output = if i + 1 == effects { last } else { "same" };
        let result = EffectResult::Ok { output: output.to_owned() };
        run.effect(&format!("ek:{i}"), "work", || EffectOutput { result, charged: Counters::default() }).unwrap();
    }
    let id = run.run().clone();
    run.fail("stopped").unwrap();
    id
}

/// R-UX-3 (review 58): the diff page compared the first 5,000 records only
/// and called two runs that part after them "the runs did the same"; it
/// names the first difference wherever it is, and says it lies past the rows
/// it shows.
#[test]
fn r_ux_3_the_diff_does_not_call_runs_the_same_that_differ_past_the_rows_shown() {
    let plane = Plane::new();
    let a = long_run(&plane, "job-long-a", 1_700, "same");
    let b = long_run(&plane, "job-long-b", 1_700, "different");
    let console = plane.console(None);
    let (status, diff) = get(&format!("{}/diff?a={a}&b={b}", console.url()));
    assert_eq!(status, 200, "{}", diff.chars().take(2_000).collect::<String>());
    assert!(!diff.contains("the runs did the same"), "two runs that differ are called the same");
    let said = diff.split("both chains verified").nth(1).unwrap().split("</p>").next().unwrap();
    assert!(said.contains("first difference at position"), "{said}");
    assert!(said.contains("past the first 5000"), "the page says the difference is not among its rows: {said}");
}

/// R-OPS-1 (review 58): a run page rendered a conclusion's reason whole (an
/// agent's 1 MiB failure reason made a page of more than 1 MiB): agent text
/// is cut on the page, saying so.
#[test]
fn r_ops_1_a_huge_conclusion_reason_is_cut_on_the_run_page() {
    let plane = Plane::new();
    let request = journal_core::AdmitRequest {
        idempotency_key: "job-huge".into(),
        plan: vec!["work".into()],
        budget: journal_core::Budget::default(),
    };
    let journal_core::Admission::New(run) = plane.runtime.admit(&plane.tenant, request).unwrap() else {
        panic!("a new run")
    };
    let id = run.run().clone();
    run.fail(&"r".repeat(1 << 20)).unwrap();
    let console = plane.console(None);
    let (status, page) = get(&format!("{}/run/shop/{id}", console.url()));
    assert_eq!(status, 200);
    assert!(page.len() < 64 << 10, "a page of {} bytes for a run of two records", page.len());
    assert!(page.contains("(cut: 1048576 bytes)"), "the cut is said: {}", page.chars().take(3_000).collect::<String>());
}

/// R-RUN-7 (review 72's note): a run page showed what a run consumed held
/// at `u64::MAX` (18446744073709551615 tokens, a number no charge made,
/// where `cost` refuses the total and `runs` says null): the figure past
/// the limit is said as such, the others stand.
#[test]
fn r_run_7_a_run_page_shows_no_figure_held_at_u64_max() {
    use journal_core::runtime::EffectOutput;
    use journal_core::{Counters, EffectResult};
    let plane = Plane::new();
    let mut run = plane.started("job-max");
    for (key, tokens) in [("ek:huge", u64::MAX - 5), ("ek:more", 1000)] {
        let charged = Counters { tokens, ..Counters::default() };
        run.effect(key, "work", || EffectOutput { result: EffectResult::Ok { output: "ok".into() }, charged }).unwrap();
    }
    let id = run.run().clone();
    run.fail("stopped").unwrap();
    let console = plane.console(None);
    let (status, page) = get(&format!("{}/run/shop/{id}", console.url()));
    assert_eq!(status, 200);
    assert!(!page.contains(&u64::MAX.to_string()), "a figure held at the limit is shown");
    assert!(page.contains("<td>tokens</td><td>past 2^64-1</td>"), "{}", page.chars().take(4_000).collect::<String>());
    assert!(page.contains("<td>effects</td><td>2</td>"), "the other figures stand");
}

/// R-OPS-1 (review 79): a peer that sends requests and never reads the
/// answers held its connection forever: hyper waits for the socket to take
/// the answer, with no timer, and the header timeout runs only while a
/// request is awaited. Before its token is read (each answer a 401), one
/// such peer per connection slot pipelining a few thousand requests made the
/// console serve no one until it was restarted. A connection whose answer
/// the peer does not take within `write_timeout` is now closed.
#[test]
fn r_ops_1_a_client_that_never_reads_its_answers_is_disconnected() {
    use std::io::{Read as _, Write as _};
    let (plane, _) = demo();
    let token = "0123456789abcdef0123";
    let options = console::ConsoleOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        token: Some(token.into()),
        header_timeout: std::time::Duration::from_millis(300),
        write_timeout: std::time::Duration::from_millis(300),
        max_connections: 1,
        ..Default::default()
    };
    let console = console::Console::start(plane.view(), options).unwrap();
    let address = console.url().trim_start_matches("http://").to_owned();
    // Pipelined requests whose answers (401 pages) fill both sockets'
    // buffers many times over; never read.
    let mut attacker = std::net::TcpStream::connect(&address).unwrap();
    let held = attacker.try_clone().unwrap();
    std::thread::spawn(move || {
        let request = b"GET / HTTP/1.1\r\nHost: console.example\r\n\r\n".repeat(1000);
        for _ in 0..40 {
            if attacker.write_all(&request).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let served = loop {
        assert!(std::time::Instant::now() < deadline, "the console served no one while a peer did not read");
        let mut honest = std::net::TcpStream::connect(&address).unwrap();
        honest.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let request =
            format!("GET /static/console.css HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\r\n");
        let _ = honest.write_all(request.as_bytes());
        let mut first = [0u8; 12];
        if honest.read_exact(&mut first).is_ok() {
            break first;
        }
    };
    assert_eq!(&served, b"HTTP/1.1 200");
    drop(held);
}

/// R-OPS-1 (review 79): a page reads its run whole (a run page, an export,
/// a diff), and each request was read on a blocking thread of its own, so
/// as many runs were held at once as requests were in flight: up to 256
/// connections, each asking for a large run (or one holding millions of
/// tiny rows written behind the plane), held 256 copies, for no more speed
/// on the machine's few cores. At most [`console::PAGES_AT_ONCE`] pages are
/// read at once now; the others wait their turn, and every one is served.
#[test]
fn r_ops_1_pages_are_read_a_few_at_a_time_whatever_the_requests_in_flight() {
    use journal_core::testkit_faults::{RoutedStore, StoreCall};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Condvar, Mutex};
    const REQUESTS: usize = 12;
    let (plane, runs) = demo();
    let in_flight = Arc::new((Mutex::new(0_usize), Condvar::new()));
    let most = Arc::new(AtomicUsize::new(0));
    let store: Arc<dyn Store> = {
        let (in_flight, most) = (Arc::clone(&in_flight), Arc::clone(&most));
        let inner = Arc::clone(&plane.store) as Arc<dyn Store>;
        Arc::new(RoutedStore::new(Box::new(move |call| {
            if matches!(call, StoreCall::ReadRun) {
                // Held as a large run's read is, until every request is
                // reading or a deadline passes: reads that may overlap do.
                let (count, changed) = &*in_flight;
                let mut now = count.lock().unwrap();
                *now += 1;
                most.fetch_max(*now, Ordering::SeqCst);
                changed.notify_all();
                let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
                while *now < REQUESTS {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    now = changed.wait_timeout(now, left).unwrap().0;
                }
                *now -= 1;
            }
            Arc::clone(&inner)
        })))
    };
    let console = plane.console_over(store);
    let url = format!("{}/run/shop/{}", console.url(), runs[0]);
    let pages: Vec<_> = (0..REQUESTS)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || get(&url).0)
        })
        .collect();
    for page in pages {
        assert_eq!(page.join().unwrap(), 200, "every page is served in its turn");
    }
    let most = most.load(Ordering::SeqCst);
    assert!((1..=console::PAGES_AT_ONCE).contains(&most), "{most} runs read at once");
}
