//! A store written behind the plane's back (redb write access, no key): the
//! console shows as verified, covered or signed only what a trusted key, a
//! verified chain and a signed checkpoint vouch for, as the audit does; and
//! it answers only requests addressed to it (no DNS rebinding).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use journal_core::store::SignedTree;
use journal_core::testkit::TamperAccess;
use journal_core::{ChainHash, KeySignature, LogView, Store};

/// R-SIG-3: a record signed by a key id the console does not trust, and
/// one whose signature was stripped, are accepted by the lenient read, but
/// neither is "verified": not in the records table, not in the run page's
/// summary (which said "signatures verified with the plane's record keys"
/// over them), not on the runs page (a good row).
#[test]
fn r_sig_3_a_signature_by_an_untrusted_key_is_not_shown_as_verified() {
    let (plane, runs) = demo();
    let rows = plane.store.read_run(&plane.tenant, &runs[0]).unwrap().rows;
    let mut row = rows[1].clone();
    row.signature = Some(KeySignature { key_id: "spiffe://attacker.example/agent".into(), signature: vec![0; 64] });
    plane.store.overwrite_row(&plane.tenant, &runs[0], row);
    let mut stripped = rows[2].clone();
    stripped.signature = None;
    plane.store.overwrite_row(&plane.tenant, &runs[0], stripped);
    let console = plane.console(None);
    let (status, page) = get(&format!("{}/run/shop/{}", console.url(), runs[0]));
    assert_eq!(status, 200, "{page}");
    assert!(
        !page.contains("verified: <code>spiffe://attacker.example/agent</code>"),
        "a signature no trusted key made is shown as verified: {page}"
    );
    assert!(page.contains("spiffe://attacker.example/agent"), "the key id is still shown: {page}");
    assert!(page.contains("verified: <code>spiffe://console.test/agent</code>"), "{page}");
    assert!(!page.contains("signatures verified with the plane"), "the summary vouches for them: {page}");
    assert!(
        page.contains("NOT all vouched for: 1 unsigned and 1 signed by a key id this plane does not trust"),
        "the summary says what no key vouches for: {page}"
    );
    let (_, untouched) = get(&format!("{}/run/shop/{}", console.url(), runs[1]));
    assert!(untouched.contains("signatures verified with the plane"), "an untouched run still is: {untouched}");
    let (_, listing) = get(&format!("{}/runs", console.url()));
    let row = row_of(&listing, &runs[0]);
    assert!(row.contains("class=\"warn\"") && row.contains("NOT all vouched for"), "a good row: {row}");
    assert!(row_of(&listing, &runs[1]).contains("class=\"good\""), "{listing}");
}

/// R-COVER-2: an open run rewritten below the head a signed heads leaf holds
/// (re-chained, its signatures dropped: the lenient read accepts it) is not
/// shown as covered by that leaf.
#[test]
fn r_cover_2_a_rewritten_open_run_is_not_shown_as_covered_by_its_heads_leaf() {
    let (plane, runs) = demo();
    let open = &runs[1];
    let rows = plane.store.read_run(&plane.tenant, open).unwrap().rows;
    let mut prev = ChainHash::GENESIS;
    for (i, row) in rows.iter().enumerate() {
        let mut row = row.clone();
        if i == rows.len() - 1 {
            let text = String::from_utf8(row.bytes.clone()).unwrap();
            assert!(text.contains("card declined"), "{text}");
            row.bytes = text.replace("failed: card declined", "failed: card accepted").into_bytes();
        }
        row.prev_hash = prev;
        row.hash = ChainHash::link(&prev, &row.bytes);
        row.signature = None;
        prev = row.hash;
        plane.store.overwrite_row(&plane.tenant, open, row);
    }
    plane.store.set_runs_head(&plane.tenant, open, journal_core::ExpectedHead { seq: rows.len() as u64, hash: prev });
    let console = plane.console(None);
    let (status, page) = get(&format!("{}/run/shop/{open}", console.url()));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("card accepted"), "the forged history is the one read: {page}");
    assert!(page.contains("heads leaf"), "{page}");
    assert!(
        !page.contains("a prefix, not a complete history · inclusion proof of") || page.contains("class=\"bad"),
        "the heads leaf holds another head than the chain's: {page}"
    );
    assert!(page.contains("does not hold this chain"), "the mismatch is named: {page}");
}

/// A sealed run the plane never checkpointed, and a cosigned row forged
/// over the current tree that carries an older, genuine note: the run is not
/// shown as held by a signed (let alone cosigned) checkpoint.
#[test]
fn a_forged_cosigned_row_does_not_make_a_run_covered() {
    let (plane, _) = demo();
    let genuine = plane.store.last_signed_checkpoint(&plane.tenant).unwrap().unwrap();
    let late = plane.run("job-late", &[("ek:late", Ok("ok"))], false);
    let head = LogView::open(plane.store.as_ref(), &plane.tenant).unwrap().head().unwrap().tree;
    assert!(head.size > genuine.tree.size);
    plane
        .store
        .record_cosigned_checkpoint(&plane.tenant, SignedTree { tree: head, note: genuine.note.clone() })
        .unwrap();
    let console = plane.console(None);
    let (status, page) = get(&format!("{}/run/shop/{late}", console.url()));
    assert_eq!(status, 200, "{page}");
    let held = page.split("cosigned checkpoint holding it:").nth(1).unwrap();
    assert!(!held.contains("signature verified"), "a note of another tree vouches for this one: {page}");
}

/// A signed checkpoint row of size 999,999 recorded beside the genuine note
/// of the last one (a row forged behind the plane, no key needed).
fn forge_a_signed_row_of_size_999999(plane: &Plane) {
    let genuine = plane.store.last_signed_checkpoint(&plane.tenant).unwrap().unwrap();
    let forged = tlog::Tree::new(999_999, genuine.tree.root);
    plane
        .store
        .record_signed_checkpoint(&plane.tenant, Some(genuine.tree), SignedTree { tree: forged, note: genuine.note })
        .unwrap();
}

/// The signed checkpoint's size and root on the plane and log pages are the
/// verified note's, never a row's beside a note of another tree.
#[test]
fn a_signed_row_is_shown_with_its_note_only_when_they_agree() {
    let (plane, _) = demo();
    forge_a_signed_row_of_size_999999(&plane);
    let console = plane.console(None);
    let (_, page) = get(console.url());
    assert!(
        !page.contains("size 999999 · <span class=\"good\">signature verified"),
        "a size no note signed is shown as verified: {page}"
    );
    let (_, log) = get(&format!("{}/log", console.url()));
    let row = log.split("<td>999999</td>").nth(1).unwrap();
    let row = row.split("</tr>").next().unwrap();
    assert!(!row.contains("signature verified"), "{row}");
}

/// R-OPS-1: the log page's chart of checkpoints over time draws only notes
/// that verify, at the size the note signs; a kept row whose note does not
/// verify (here a forged size beside a genuine note) is counted apart and
/// named, never drawn as a signed checkpoint.
#[test]
fn r_ops_1_the_log_chart_draws_only_checkpoints_whose_note_verifies() {
    let (plane, _) = demo();
    let kept = plane.store.signed_checkpoints(&plane.tenant).unwrap().len();
    forge_a_signed_row_of_size_999999(&plane);
    let console = plane.console(None);
    let (status, log) = get(&format!("{}/log", console.url()));
    assert_eq!(status, 200, "{log}");
    let chart = log.split("<svg class=\"sizes\"").nth(1).unwrap().split("</svg>").next().unwrap();
    assert!(!chart.contains("999999"), "a size no note signed is drawn as a checkpoint: {chart}");
    assert_eq!(chart.matches("<rect").count(), kept, "one bar per verified note: {chart}");
    assert!(
        log.contains(&format!("{kept} verified")) && log.contains("1 kept row does not verify"),
        "the heading counts what verifies and names what does not: {log}"
    );
}

/// A console on localhost with no token answers only requests addressed to
/// localhost: a page of another site that rebinds its name to 127.0.0.1
/// reads nothing (DNS rebinding).
#[test]
fn a_request_for_another_host_is_refused_on_localhost() {
    let (plane, _) = demo();
    let console = plane.console(None);
    let client = reqwest::blocking::Client::new();
    let port = console.url().rsplit(':').next().unwrap().to_owned();
    for host in [format!("attacker.example:{port}"), "attacker.example".to_owned(), format!("127.0.0.2.nip.io:{port}")]
    {
        let response = client.get(format!("{}/runs", console.url())).header("host", host.clone()).send().unwrap();
        assert_eq!(response.status().as_u16(), 421, "{host}");
    }
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}"), "localhost".to_owned()] {
        let response = client.get(format!("{}/runs", console.url())).header("host", host.clone()).send().unwrap();
        assert_eq!(response.status().as_u16(), 200, "{host}");
    }
}

/// The `<tr>` of the runs page that names `run`.
fn row_of<'a>(page: &'a str, run: &journal_core::RunId) -> &'a str {
    page.split("<tr>")
        .find(|row| row.contains(&format!("<code>{run}</code>")))
        .unwrap_or_else(|| panic!("{run}: {page}"))
}

/// R-AUD-8 (review 29): the runs page is built from derived rows someone
/// with the store can write without a key: the admission order (the
/// "admitted" column), the runs table's outcome column (the outcome filter)
/// and the idempotency index (the search). A succeeded run listed at a
/// forged instant, a failed run listed under `succeeded`, and a key pointed
/// at a run not admitted under it were each shown as a good row of the
/// verified chain. Each row is now held to its verified chain: what the
/// chain contradicts is named in a bad row, and the search finds the run the
/// key derives, whatever the index says.
#[test]
fn r_aud_8_the_runs_page_holds_every_listed_row_to_its_verified_chain() {
    let (plane, runs) = demo();
    let (ok, failed) = (&runs[0], &runs[1]);
    let first = &plane.store.read_run(&plane.tenant, ok).unwrap().rows[0];
    let genuine =
        journal_core::AdmittedRun { at: journal_core::store::admitted_at_of(first).unwrap(), run: ok.clone() };
    let forged = journal_core::AdmittedRun {
        at: journal_core::At::from_unix_millis(genuine.at.unix_millis() - 86_400_000).unwrap(),
        run: ok.clone(),
    };
    plane.store.set_admission(&plane.tenant, &genuine, false);
    plane.store.set_admission(&plane.tenant, &forged, true);
    plane.store.set_idempotency(&plane.tenant, "job-ok", failed);
    {
        use redb::ReadableTable as _;
        let runs: redb::TableDefinition<(&str, &str), RunsRow> = redb::TableDefinition::new("runs");
        // Shared, as every handle of the plane opens the file (the plane's is open).
        let mut builder = redb::Builder::new();
        builder.set_concurrency_mode(store_redb::CONCURRENCY);
        let db = builder.open(plane.dir.path().join("plane.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(runs).unwrap();
            let (seq, hash, sealed) = {
                let row = table.get(("shop", failed.as_str())).unwrap().unwrap();
                let (seq, hash, sealed, outcome) = row.value();
                assert_eq!(outcome, Some("failed"));
                (seq, hash.to_vec(), sealed)
            };
            table.insert(("shop", failed.as_str()), (seq, hash.as_slice(), sealed, Some("succeeded"))).unwrap();
        }
        txn.commit().unwrap();
    }
    let console = plane.console(None);
    let (status, page) = get(&format!("{}/runs", console.url()));
    assert_eq!(status, 200, "{page}");
    let row = row_of(&page, ok);
    assert!(row.contains("class=\"bad\"") && row.contains("admission order"), "a forged instant shown as good: {row}");
    let (_, listed) = get(&format!("{}/runs?outcome=succeeded", console.url()));
    let row = row_of(&listed, failed);
    assert!(row.contains("class=\"bad\"") && row.contains("last conclusion is failed"), "{row}");
    let (_, found) = get(&format!("{}/runs?q=job-ok", console.url()));
    let row = row_of(&found, failed);
    assert!(row.contains("class=\"bad\"") && row.contains("idempotency index"), "{row}");
    assert!(found.contains(&format!("<code>{ok}</code>")), "the run the key derives is found: {found}");
}

/// R-COVER-4 (review 29): a run of tenant `shop` copied into tenant
/// `search` behind the plane (its records, which the plane's one record key
/// signed, and a runs row) was shown on `search`'s run page as a verified
/// run of `search`; the audit of `search` finds it bound to another tenant.
/// The page now says it is not a run of `search`.
#[test]
fn r_cover_4_a_run_copied_in_from_another_tenant_is_not_shown_as_its_run() {
    use redb::ReadableTable as _;
    let (plane, runs) = demo();
    let search = journal_core::TenantId::new("search").unwrap();
    let stored = plane.store.read_run(&plane.tenant, &runs[0]).unwrap();
    for row in stored.rows {
        plane.store.overwrite_row(&search, &runs[0], row);
    }
    let head = stored.head.unwrap();
    {
        let table: redb::TableDefinition<(&str, &str), RunsRow> = redb::TableDefinition::new("runs");
        let mut builder = redb::Builder::new();
        builder.set_concurrency_mode(store_redb::CONCURRENCY);
        let db = builder.open(plane.dir.path().join("plane.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(table).unwrap();
            assert!(table.get(("search", runs[0].as_str())).unwrap().is_none());
            let row = (head.seq, head.hash.as_bytes().as_slice(), false, None);
            table.insert(("search", runs[0].as_str()), row).unwrap();
        }
        txn.commit().unwrap();
    }
    let mut view = plane.view();
    view.tenants.push(console::TenantLog {
        tenant: search,
        origin: journal_core::Origin::new("console.test/plane/search").unwrap(),
    });
    let options = console::ConsoleOptions { listen: "127.0.0.1:0".parse().unwrap(), ..Default::default() };
    let console = console::Console::start(view, options).unwrap();
    let (_, page) = get(&format!("{}/run/search/{}", console.url(), runs[0]));
    assert!(page.contains("is not a run of tenant search"), "another tenant's run shown as search's: {page}");
    let (_, genuine) = get(&format!("{}/run/shop/{}", console.url(), runs[0]));
    assert!(!genuine.contains("is not a run of tenant"), "{genuine}");
}

/// R-RUN-2, R-AUD-8 (review 29): a sealed run's row removed from the
/// store's seal lookup (its seal leaf left in the log) was shown on its page
/// as a run "no leaf of the log covers yet: it moved after the last
/// checkpoint", a warning about an open run, while its verified chain's last
/// conclusion seals it, and its export was refused as "not covered yet".
/// The page and the export now say the seal lookup contradicts the chain.
#[test]
fn r_run_2_a_sealed_run_whose_seal_lookup_is_gone_is_not_shown_as_an_open_run() {
    let (plane, runs) = demo();
    plane.store.hide_seal_of(&plane.tenant, &runs[0]);
    let console = plane.console(None);
    let (status, page) = get(&format!("{}/run/shop/{}", console.url(), runs[0]));
    assert_eq!(status, 200, "{page}");
    assert!(!page.contains("it moved after the last checkpoint"), "a sealed run shown as an open one: {page}");
    assert!(page.contains("finds no seal of it"), "{page}");
    let (status, export) = get(&format!("{}/run/shop/{}/export", console.url(), runs[0]));
    assert_eq!(status, 409, "{export}");
    assert!(export.contains("finds no seal of it"), "the export answered from the lookup alone: {export}");
}

/// A row of redb's `runs` table: head seq, head hash, sealed, outcome.
type RunsRow<'a> = (u64, &'a [u8], bool, Option<&'a str>);

/// R-SIG-3 (review 58): the diff page read both runs leniently and said
/// "both chains verified · the runs did the same" of a run rewritten behind
/// the plane (its effect's answer changed to the other run's, re-chained,
/// its signatures dropped); it now says, for each run, what no trusted key
/// vouches for, and a comparison resting on such records is not shown as good.
#[test]
fn r_sig_3_the_diff_page_says_what_no_trusted_key_vouches_for() {
    let plane = Plane::new();
    let a = plane.run("job-a", &[("ek:charge", Ok("charged"))], true);
    let b = plane.run("job-b", &[("ek:charge", Ok("refunded"))], true);
    let console = plane.console(None);
    let (_, before) = get(&format!("{}/diff?a={a}&b={b}", console.url()));
    assert!(before.contains("first difference at position"), "{before}");
    let rows = plane.store.read_run(&plane.tenant, &b).unwrap().rows;
    let mut prev = ChainHash::GENESIS;
    for row in &rows {
        let mut row = row.clone();
        let text = String::from_utf8(row.bytes.clone()).unwrap();
        if text.contains("refunded") {
            row.bytes = text.replace("refunded", "charged").into_bytes();
        }
        if row.prev_hash != prev || text.contains("refunded") {
            row.prev_hash = prev;
            row.hash = ChainHash::link(&prev, &row.bytes);
            row.signature = None;
            plane.store.overwrite_row(&plane.tenant, &b, row.clone());
        }
        prev = row.hash;
    }
    plane.store.set_runs_head(&plane.tenant, &b, journal_core::ExpectedHead { seq: rows.len() as u64, hash: prev });
    let (status, page) = get(&format!("{}/diff?a={a}&b={b}", console.url()));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("NOT all vouched for: 3 unsigned"), "the forged run's records are named: {page}");
    assert!(!page.contains("<span class=\"good\">the runs did the same"), "a forged sameness shown as good: {page}");
    let (_, genuine) = get(&format!("{}/diff?a={a}&b={a}", console.url()));
    assert!(genuine.contains("<span class=\"good\">the runs did the same"), "{genuine}");
    assert!(genuine.contains("signatures verified with the plane"), "{genuine}");
}

/// Review 58: a copy of an older, genuinely signed checkpoint row recorded
/// after the newest (store write access, no key) made the plane page show
/// that older checkpoint as the last signed one, "signature verified". The
/// page shows the largest verified checkpoint among the newest kept rows,
/// and names a newest row smaller than one signed before it in red.
#[test]
fn a_copied_older_signed_row_is_not_shown_as_the_last_signed_checkpoint() {
    let (plane, _) = demo();
    let old = plane.store.last_signed_checkpoint(&plane.tenant).unwrap().unwrap();
    plane.run("job-later", &[("ek:later", Ok("ok"))], false);
    plane.checkpoint();
    let newer = plane.store.last_signed_checkpoint(&plane.tenant).unwrap().unwrap();
    assert!(newer.tree.size > old.tree.size);
    plane.store.record_signed_checkpoint(&plane.tenant, Some(newer.tree), old.clone()).unwrap();
    let console = plane.console(None);
    let (status, page) = get(console.url());
    assert_eq!(status, 200, "{page}");
    let signed = page.split("last signed checkpoint").nth(1).unwrap().split("</tr>").next().unwrap();
    assert!(
        signed.contains(&format!("size {} · <span class=\"good\">signature verified", newer.tree.size)),
        "the largest signed checkpoint is the last: {signed}"
    );
    assert!(!signed.contains(&format!("size {} ·", old.tree.size)), "an older one is shown as the last: {signed}");
    assert!(
        signed.contains("class=\"bad\"") && signed.contains(&format!("newest kept row is of size {}", old.tree.size)),
        "the row written behind the plane is named: {signed}"
    );
}

/// R-UX-3 (review 58): one cosignature line in a kept note that names a
/// configured witness and does not verify (appended behind the plane) made
/// the console drop every cosignature of the note: the plane page said "no
/// configured witness cosigned it" and counted the witness's valid line
/// among "lines by keys not trusted here". The valid cosignature is shown,
/// and the line that does not verify is named in red.
#[test]
fn r_ux_3_a_bad_cosignature_line_does_not_hide_the_valid_ones() {
    let (plane, _) = demo();
    let cosigner = witness::Cosigner::new(
        witness::SignerKey::from_seed("witness.test/w1", witness::ALG_COSIGNATURE_V1, [7; 32]).unwrap(),
    )
    .unwrap();
    let signed = plane.store.last_signed_checkpoint(&plane.tenant).unwrap().unwrap();
    let (text, _) = witness::split_note(&signed.note).unwrap();
    let good = cosigner.cosign(text, 1_700_000_000).unwrap();
    let mut bad = good.clone();
    bad.signature[20] ^= 1;
    let note = format!("{}{}{}", signed.note, good.to_line(), bad.to_line());
    plane.store.record_cosigned_checkpoint(&plane.tenant, SignedTree { tree: signed.tree, note }).unwrap();
    let mut view = plane.view();
    view.witnesses = vec![witness::TrustedWitness::new(cosigner.verifier_key()).unwrap()];
    let options = console::ConsoleOptions { listen: "127.0.0.1:0".parse().unwrap(), ..Default::default() };
    let console = console::Console::start(view, options).unwrap();
    let (status, page) = get(console.url());
    assert_eq!(status, 200, "{page}");
    let cosigned = page.split("last cosigned checkpoint").nth(1).unwrap().split("</tr>").next().unwrap();
    assert!(cosigned.contains("cosigned by"), "the valid cosignature is dropped: {cosigned}");
    assert!(cosigned.contains("witness.test/w1"), "{cosigned}");
    // The witness's time as an instant, as every other time the console shows.
    assert!(cosigned.contains("verified, at 2023-11-14T22:13:20.000Z"), "{cosigned}");
    assert!(!cosigned.contains("not trusted here"), "a configured witness's line called untrusted: {cosigned}");
    assert!(cosigned.contains("class=\"bad\"") && cosigned.contains("does not verify"), "{cosigned}");
}

/// R-OPS-1 (review 58's cut, on the runs page): an idempotency index
/// pointed behind the plane at a run admitted under a 1 MiB key (an agent's
/// key; now at most `MAX_IDEMPOTENCY_KEY_BYTES`, still longer than a page
/// shows) made the search's "NOT as listed" row quote that key whole: a
/// page of more than 1 MiB. The key is cut as the
/// run page cuts it, saying so.
#[test]
fn r_ops_1_a_run_found_under_another_key_does_not_quote_its_huge_key_whole() {
    let (plane, _) = demo();
    // The longest key the plane admits (review 69 bounded it; a 1 MiB key
    // before).
    let huge = plane.run(&"k".repeat(journal_core::append::MAX_IDEMPOTENCY_KEY_BYTES), &[("ek:1", Ok("ok"))], false);
    plane.store.set_idempotency(&plane.tenant, "job-ok", &huge);
    let console = plane.console(None);
    let (status, found) = get(&format!("{}/runs?q=job-ok", console.url()));
    assert_eq!(status, 200);
    let row = row_of(&found, &huge);
    assert!(row.contains("class=\"bad\"") && row.contains("idempotency index"), "{}", &row[..2_000.min(row.len())]);
    assert!(found.len() < 64 << 10, "a page of {} bytes", found.len());
    let said = format!("(cut: {} bytes)", journal_core::append::MAX_IDEMPOTENCY_KEY_BYTES);
    assert!(row.contains(&said), "the cut is said: {}", &row[..2_000.min(row.len())]);
}

/// R-UX-3, R-STORE-1 (review 93): a run made large behind the plane (four
/// rows of 1 MiB written into the redb file, no key) is read by no page
/// past the console's bound (lowered here to 1 MiB,
/// `ConsoleOptions::max_run_bytes`): its run page, a diff holding it and
/// its export answer 413 saying it is too large to show here and what to
/// use instead, never a part of its chain shown as the run; the runs page
/// lists it as too large to summarise; a run within the bound still shows.
#[test]
fn r_ux_3_r_store_1_a_run_made_large_behind_the_plane_is_too_large_to_show_not_read_whole() {
    let (plane, runs) = demo();
    let (normal, large) = (&runs[0], &runs[1]);
    journal_core::testkit::grow_run_behind_the_plane(plane.store.as_ref(), &plane.tenant, large, 4);
    let options = console::ConsoleOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        max_run_bytes: 1 << 20,
        ..Default::default()
    };
    let console = console::Console::start(plane.view(), options).unwrap();
    let (status, page) = get(&format!("{}/run/shop/{large}", console.url()));
    assert_eq!(status, 413, "{page}");
    for said in [
        "too large to show here",
        "1048576 bytes",
        &format!("agentplane show {large}"),
        &format!("agentplane export {large} -o FILE"),
        "--max-run-bytes",
    ] {
        assert!(page.contains(said), "the page says {said:?}: {page}");
    }
    assert!(!page.contains("chain verified") && !page.contains("records</h2>"), "a part shown as the run: {page}");
    let (status, page) = get(&format!("{}/run/shop/{normal}", console.url()));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("chain verified"), "{page}");
    let (status, page) = get(&format!("{}/diff?a={normal}&b={large}", console.url()));
    assert_eq!(status, 413, "{page}");
    assert!(page.contains("too large to show here"), "{page}");
    let (status, page) = get(&format!("{}/run/shop/{large}/export", console.url()));
    assert_eq!(status, 413, "{page}");
    assert!(page.contains(&format!("agentplane export {large} -o FILE")), "{page}");
    let (status, listing) = get(&format!("{}/runs", console.url()));
    assert_eq!(status, 200, "{listing}");
    let row = row_of(&listing, large);
    assert!(row.contains("class=\"warn\"") && row.contains("too large to summarise here"), "{row}");
    assert!(row_of(&listing, normal).contains("class=\"good\""), "{listing}");
}
