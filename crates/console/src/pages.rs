//! The pages. Each handler reads the store on a blocking thread, verifies
//! what it shows with the journal's own code, and renders HTML with maud
//! (every interpolated value escaped).

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use journal_core::checkpoints::{cosigned_inclusion, latest_cosigned};
use journal_core::export::{ExportProof, write_export};
use journal_core::store::CheckpointRows;
use journal_core::{
    AdmittedRun, ChainCheck, Journal, JournalError, LogView, Outcome, RecordBody, RunId, RunState, SignatureCheck,
    SignedHash, Unvouched, VerifiedRecord, VerifyOptions,
};
use maud::{DOCTYPE, Markup, html};
use serde::Deserialize;
use witness::{NoteVerifier, SignedCheckpoint};

use crate::{App, TenantLog, timeline};

/// The longest query parameter a page accepts.
const MAX_PARAMETER: usize = 200;
/// Runs per page.
const PAGE_SIZE: usize = 50;
/// The largest export the console serves; a longer run is exported with
/// `agentplane export` instead.
const MAX_EXPORT_BYTES: usize = 64 << 20;
/// Records shown on a run page (a longer run is cut, saying so).
const MAX_RECORDS_SHOWN: usize = 5_000;
/// The most characters of one piece of agent text a page shows (a
/// conclusion's reason, an effect key, an idempotency key, a timeline
/// label): a record may hold 16 MiB of it.
const MAX_TEXT_SHOWN: usize = 1_000;

/// Agent text as a page shows it: whole up to [`MAX_TEXT_SHOWN`]
/// characters, else cut there, saying how long it was.
pub(crate) fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT_SHOWN) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}… (cut: {} bytes)", text.get(..at).unwrap_or_default(), text.len()),
    }
}

/// Why a page could not be rendered.
struct PageError {
    status: StatusCode,
    message: String,
}

impl PageError {
    fn bad(message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, message: message.into() }
    }

    fn missing(message: impl Into<String>) -> Self {
        Self { status: StatusCode::NOT_FOUND, message: message.into() }
    }

    fn conflict(message: impl Into<String>) -> Self {
        Self { status: StatusCode::CONFLICT, message: message.into() }
    }

    fn internal(message: impl Into<String>) -> Self {
        Self { status: StatusCode::INTERNAL_SERVER_ERROR, message: message.into() }
    }
}

impl From<JournalError> for PageError {
    fn from(err: JournalError) -> Self {
        let status = match err {
            JournalError::NotFound { .. } => StatusCode::NOT_FOUND,
            // The store stopped reading it at the console's bound: no part
            // of it is shown as the run (413, as for an export too large
            // to serve), only what to use instead.
            JournalError::RunTooLarge { .. } => {
                return Self {
                    status: StatusCode::PAYLOAD_TOO_LARGE,
                    message: format!("this run is too large to show here: {err}"),
                };
            }
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Self { status, message: err.to_string() }
    }
}

/// A page with the error, in the console's layout.
pub(crate) fn error_page(status: StatusCode, message: &str) -> Response {
    let body = layout("error", html! { p class="bad" { (message) } });
    (status, Html(disguises_shown(body.into_string()))).into_response()
}

/// A rendered page with every character that reorders, moves or hides text
/// ([`witness::text::disguises`]: a bidirectional override or mark, a
/// control character, a zero-width space) shown as its escape (`\u{202e}`),
/// as the CLI shows them: HTML escaping leaves them in place, where an
/// override in a step name or an output reorders what is read after it
/// (`gpj.exe` read as `exe.jpg`) and a character the browser shows as
/// nothing makes two effect keys read as one. The console's own templates
/// hold none but the blanks HTML reads as a space (a newline, a tab, a
/// carriage return; no page holds a `pre`), which stay: every other one is
/// text recorded by an agent or a store.
fn disguises_shown(page: String) -> String {
    let escaped = |c: char| !matches!(c, '\n' | '\t' | '\r') && witness::text::disguises(c);
    if !page.chars().any(escaped) {
        return page;
    }
    page.chars().map(|c| if escaped(c) { c.escape_unicode().to_string() } else { c.to_string() }).collect()
}

/// A query the page cannot read (a number that is not one, a parameter
/// given twice): the console's own error page, 400, saying why in at most
/// 300 characters, never axum's plain text.
fn bad_query(rejection: &QueryRejection) -> Response {
    let why: String = rejection.body_text().chars().take(300).collect();
    error_page(StatusCode::BAD_REQUEST, &format!("this page cannot read its query: {why}"))
}

/// Renders a page on a blocking thread, in its turn (at most
/// [`crate::PAGES_AT_ONCE`] at once); the response says how long the page
/// took to read, verify and render (`Server-Timing: page;dur=MS`), the
/// server time `cargo xtask bench` reports.
async fn render(app: Arc<App>, page: impl FnOnce(&App) -> Result<Markup, PageError> + Send + 'static) -> Response {
    let Ok(turn) = Arc::clone(&app.pages).acquire_owned().await else {
        return error_page(StatusCode::SERVICE_UNAVAILABLE, "the console is stopping");
    };
    let rendered = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        let start = std::time::Instant::now();
        let page = page(&app).map(|page| disguises_shown(page.into_string()));
        (page, start.elapsed())
    })
    .await;
    match rendered {
        Ok((Ok(html), took)) => {
            let mut response = Html(html).into_response();
            let timing = format!("page;dur={:.3}", took.as_secs_f64() * 1e3);
            if let Ok(value) = header::HeaderValue::from_str(&timing) {
                response.headers_mut().insert("server-timing", value);
            }
            response
        }
        Ok((Err(err), _)) => error_page(err.status, &err.message),
        Err(_) => error_page(StatusCode::INTERNAL_SERVER_ERROR, "the page's worker failed"),
    }
}

fn layout(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) " · agentplane console" }
                link rel="stylesheet" href="/static/console.css";
                link rel="icon" type="image/svg+xml" href="/static/favicon.svg";
            }
            body {
                nav {
                    a href="/" { "plane" } " "
                    a href="/runs" { "runs" } " "
                    a href="/log" { "log" }
                    span class="readonly" { "read-only" }
                }
                main { (body) }
            }
        }
    }
}

/// A bounded, optional query parameter.
fn parameter<'a>(name: &str, value: &'a Option<String>) -> Result<Option<&'a str>, PageError> {
    match value.as_deref() {
        Some(text) if text.len() > MAX_PARAMETER => {
            Err(PageError::bad(format!("{name} is longer than {MAX_PARAMETER} characters")))
        }
        Some("") | None => Ok(None),
        Some(text) => Ok(Some(text)),
    }
}

fn tenant_of<'a>(app: &'a App, name: Option<&str>) -> Result<&'a TenantLog, PageError> {
    match name {
        None => app.plane.tenants.first().ok_or_else(|| PageError::missing("the plane names no tenant")),
        Some(name) => app
            .plane
            .tenants
            .iter()
            .find(|log| log.tenant.as_str() == name)
            .ok_or_else(|| PageError::missing(format!("the plane names no tenant {name:?}"))),
    }
}

fn check<'a>(app: &'a App) -> ChainCheck<'a> {
    ChainCheck {
        upcasters: &app.plane.upcasters,
        verifier: app.plane.record_verifier.as_deref(),
        options: VerifyOptions::default(),
    }
}

/// A run of the tenant, its chain verified and its admission held to the
/// tenant and the run id (R-COVER-4): a run copied in from another tenant
/// is not shown as this one's. The store reads at most `max_bytes` of its
/// rows ([`crate::ConsoleOptions::max_run_bytes`]): a larger run is
/// [`JournalError::RunTooLarge`], never held whole nor shown in part.
fn read_bound(
    journal: &Journal<'_>,
    run: &RunId,
    app: &App,
    max_bytes: usize,
) -> Result<journal_core::VerifiedRun, JournalError> {
    let verified = journal.read_within(run, check(app), max_bytes)?;
    verified.bound_to(journal.tenant, run)?;
    Ok(verified)
}

fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}

/// A note verified with the plane's log keys, its cosignatures with the
/// configured witnesses. A note of another log, or of another tree than the
/// one the store keeps beside it, does not verify: the page shows the note's
/// own tree, never a row's.
enum NoteStatus {
    Verified {
        signer: String,
        tree: tlog::Tree,
        cosigners: Vec<(String, u64)>,
        /// Lines naming a configured witness that do not verify: its name, why.
        failing: Vec<(String, String)>,
        other_lines: usize,
    },
    Unverified(String),
    NoLogKey,
}

fn note_status(app: &App, log: &TenantLog, note: &str, kept: Option<tlog::Tree>) -> NoteStatus {
    if app.plane.log_keys.is_empty() {
        return NoteStatus::NoLogKey;
    }
    let verifiers: Vec<&dyn NoteVerifier> = app.plane.log_keys.iter().map(|key| key as &dyn NoteVerifier).collect();
    match SignedCheckpoint::open(note.as_bytes(), &verifiers) {
        Err(err) => NoteStatus::Unverified(err.to_string()),
        Ok((signed, opened)) => {
            let checkpoint = signed.checkpoint();
            if checkpoint.origin() != log.origin.as_str() {
                return NoteStatus::Unverified(format!(
                    "it is a checkpoint of the log {:?}, not of this tenant's {:?}",
                    checkpoint.origin(),
                    log.origin.as_str()
                ));
            }
            let tree = checkpoint.tree();
            if let Some(kept) = kept.filter(|kept| *kept != tree) {
                return NoteStatus::Unverified(format!(
                    "the note signs size {} (root {}), not the size {} (root {}) the store keeps beside it",
                    tree.size,
                    short(&tree.root.to_string()),
                    kept.size,
                    short(&kept.root.to_string())
                ));
            }
            // Each line on its own, as `verify_cosignatures` checks them: one
            // line that does not verify is named, never a reason to drop the
            // lines that do (that call answers only its first failure).
            let (mut valid, mut failing, mut other_lines) = (Vec::<witness::Cosignature>::new(), Vec::new(), 0);
            for line in opened.other_signatures() {
                let Some(trusted) = app.plane.witnesses.iter().find(|witness| witness.matches(line)) else {
                    other_lines += 1;
                    continue;
                };
                match trusted.check(opened.text(), line) {
                    // A second line by one key counts once.
                    witness::CosignatureCheck::Valid(cosignature) => {
                        if !valid.iter().any(|seen| seen.public_key == cosignature.public_key) {
                            valid.push(cosignature);
                        }
                    }
                    witness::CosignatureCheck::Invalid(err) => failing.push((line.name.clone(), err.to_string())),
                    witness::CosignatureCheck::OtherType { .. } => other_lines += 1,
                }
            }
            NoteStatus::Verified {
                signer: checkpoint.origin().to_owned(),
                tree,
                cosigners: valid.into_iter().map(|c| (c.name, c.timestamp)).collect(),
                failing,
                other_lines,
            }
        }
    }
}

fn note_markup(status: &NoteStatus) -> Markup {
    html! {
        @match status {
            NoteStatus::Verified { signer, cosigners, failing, other_lines, .. } => {
                span class="good" { "signature verified: log key " code { (signer) } }
                @if cosigners.is_empty() {
                    " · " span class="warn" { "no configured witness cosigned it" }
                } @else {
                    " · cosigned by "
                    @for (i, (name, timestamp)) in cosigners.iter().enumerate() {
                        @if i > 0 { ", " }
                        span class="good" { code { (name) } " (verified, at " (cosigned_at(*timestamp)) ")" }
                    }
                }
                @for (name, why) in failing {
                    " · " span class="bad" { "a line naming configured witness " code { (name) } " does not verify: " (why) }
                }
                @if *other_lines > 0 { " · " (other_lines) " lines by keys not trusted here" }
            }
            NoteStatus::Unverified(why) => span class="bad" { "does not verify: " (why) },
            NoteStatus::NoLogKey => span class="warn" { "not verified (no log key given)" },
        }
    }
}

// ---------------------------------------------------------------- the plane

pub(crate) async fn plane(State(app): State<Arc<App>>) -> Response {
    render(app, render_plane).await
}

fn render_plane(app: &App) -> Result<Markup, PageError> {
    let store = app.plane.store.as_ref();
    let mut sections = Vec::new();
    let mut verdicts = Vec::new();
    for log in &app.plane.tenants {
        // The verdict is read before the log: the audit that left it read a
        // log the store held then, so the view opened next holds it too.
        // Read after the view, a verdict left meanwhile by an audit of a
        // plane that grew looked like a log that shrank.
        let last = app.plane.folder.as_ref().map(|folder| crate::last_audit::read(folder, log.tenant.as_str()));
        let view = LogView::open(store, &log.tenant)?;
        let head = view.head()?.tree;
        verdicts.push(last_audit_markup(log, last, &view, head));
        let runs = store.runs(&log.tenant, None)?.len();
        let signed = last_signed(app, log)?;
        let cosigned = latest_cosigned(store, &log.tenant)?;
        sections.push(html! {
            section class="tenant" {
                h2 { "tenant " code { (log.tenant) } }
                table {
                    tr { th { "origin" } td { code { (log.origin) } } }
                    tr { th { "log" } td { (head.size) " leaves, root " code title=(head.root) { (short(&head.root.to_string())) } } }
                    tr { th { "runs" } td { a href={"/runs?tenant=" (percent(log.tenant.as_str()))} { (runs) " runs" } } }
                    tr {
                        th { "last signed checkpoint" }
                        td {
                            @match &signed {
                                None => span class="warn" { "none yet (" code { "agentplane checkpoint" } ")" },
                                Some(signed) => {
                                    "size " (signed.shown.tree.size) " · " (note_markup(&signed.status))
                                    @if let Some((newest, status)) = &signed.newest_apart {
                                        " · " span class="bad" {
                                            "the newest kept row is of size " (newest.tree.size) ", "
                                            @match status {
                                                NoteStatus::Verified { .. } => "a smaller tree than one signed before it",
                                                _ => "its note not verified",
                                            }
                                            ": a row written behind the plane (" code { "agentplane verify" } ")"
                                        }
                                    }
                                }
                            }
                        }
                    }
                    tr {
                        th { "last cosigned checkpoint" }
                        td {
                            @match &cosigned {
                                None => span class="warn" { "none yet (" code { "agentplane sweep" } ")" },
                                Some(cosigned) => {
                                    "size " (cosigned.checkpoint.tree().size) " · "
                                    (note_markup(&note_status(app, log, &cosigned.note, Some(cosigned.checkpoint.tree()))))
                                }
                            }
                        }
                    }
                }
            }
        });
    }
    Ok(layout(
        "plane",
        html! {
            h1 { "plane" }
            @for section in &sections { (section) }
            section class="hint" {
                h2 { "audit" }
                @for verdict in &verdicts { (verdict) }
                p {
                    "The console does not audit. An auditor holds the store to a checkpoint saved earlier with "
                    code { "agentplane audit --log-key VKEY --record-key KEY --require-signature --checkpoint saved.note --assert-complete" }
                    " (the plane itself: " code { "agentplane verify" } "); run in the plane's folder, it leaves its verdict here."
                }
            }
        },
    ))
}

/// The signed checkpoint the plane page shows as the last one, and the
/// newest kept row when it is not that one.
struct LastSigned {
    shown: journal_core::store::SignedTree,
    status: NoteStatus,
    newest_apart: Option<(journal_core::store::SignedTree, NoteStatus)>,
}

/// The largest verified signed checkpoint among the newest kept rows (the
/// newest of equal ones), as `latest_cosigned` picks the cosigned one: the
/// plane never signs a smaller tree after a larger, so the newest row alone
/// (a copy of an older, genuine note recorded after the newest, no key
/// needed) would show an older checkpoint as the last. With no row that
/// verifies, the newest row with its status.
fn last_signed(app: &App, log: &TenantLog) -> Result<Option<LastSigned>, PageError> {
    let mut rows = app.plane.store.newest_checkpoints(&log.tenant, CheckpointRows::Signed, LOG_PAGE_CHECKPOINTS)?;
    let mut statuses: Vec<NoteStatus> =
        rows.iter().map(|row| note_status(app, log, &row.note, Some(row.tree))).collect();
    let largest = rows
        .iter()
        .zip(&statuses)
        .enumerate()
        .filter(|(_, (_, status))| matches!(status, NoteStatus::Verified { .. }))
        .max_by_key(|(i, (row, _))| (row.tree.size, *i))
        .map(|(i, _)| i);
    let (Some(newest), Some(newest_status)) = (rows.pop(), statuses.pop()) else {
        return Ok(None);
    };
    Ok(Some(match largest {
        Some(i) if i < rows.len() => {
            let (shown, status) = (rows.swap_remove(i), statuses.swap_remove(i));
            LastSigned { shown, status, newest_apart: Some((newest, newest_status)) }
        }
        _ => LastSigned { shown: newest, status: newest_status, newest_apart: None },
    }))
}

/// The last audit's verdict for a tenant, if one was left in the plane's
/// folder, and whether the current log still has its size and root, or
/// extends it (the root of its first `size` leaves is the audited root).
fn last_audit_markup(
    log: &TenantLog,
    last: Option<Result<Option<crate::last_audit::LastAudit>, crate::last_audit::LastAuditError>>,
    view: &LogView<'_>,
    head: tlog::Tree,
) -> Markup {
    let Some(last) = last else {
        return html! { p class="warn" { "tenant " code { (log.tenant) } ": this plane has no folder to keep an audit's verdict in" } };
    };
    let verdict = match last {
        Ok(Some(verdict)) => verdict,
        Ok(None) => {
            return html! { p class="warn" { "tenant " code { (log.tenant) } ": no audit has been run here yet" } };
        }
        Err(err) => {
            return html! { p class="bad" { "tenant " code { (log.tenant) } ": the last audit's verdict is unreadable: " (err) } };
        }
    };
    // An audit held to another log's origin (another tenant's log key) says
    // nothing of this tenant's log: never shown as its verdict (R-STORE-4).
    if verdict.origin != log.origin.as_str() {
        return html! { p class="bad" { "tenant " code { (log.tenant) } ": the last audit was of the log "
        code { (verdict.origin) } ", not of this tenant's " code { (log.origin) }
        ": it says nothing of this log (run the audit again with this tenant's log key)" } };
    }
    // Findings that are all build skew (the audit's exit 3) say this build
    // cannot read what a newer one wrote, not that the history was altered
    // (R-VER-4): the warning's colour, not the alarm's.
    let only_skew = !verdict.classes.is_empty() && verdict.classes.iter().all(|class| class == "build_skew");
    let class = match verdict.verdict.as_str() {
        "clean" => "good",
        "incomplete" => "warn",
        "findings" if only_skew => "warn",
        _ => "bad",
    };
    let now = if verdict.log_size == head.size {
        if verdict.log_root == head.root.to_string() {
            html! { span class="good" { "the log is still that tree" } }
        } else {
            html! { span class="bad" { "the log has that size with another root: it is not the tree audited" } }
        }
    } else if verdict.log_size > head.size {
        html! { span class="bad" { "the log is smaller now (" (head.size) " leaves): it is not the tree audited" } }
    } else {
        match view.root_at(verdict.log_size) {
            Ok(root) if root.to_string() == verdict.log_root => html! {
                span class="good" { "the log extends it: " (head.size - verdict.log_size) " leaves since, its first "
                    (verdict.log_size) " give the audited root" }
                " (not audited since)"
            },
            Ok(_) => {
                html! { span class="bad" { "the log does not extend it: its first " (verdict.log_size) " leaves give another root" } }
            }
            Err(err) => html! { span class="bad" { "the log cannot be compared with it: " (err) } },
        }
    };
    html! {
        div class="last-audit" {
            p {
                "tenant " code { (log.tenant) } ": last " code { "agentplane " (verdict.command) } " at " (verdict.at) ": "
                strong class=(class) { (verdict.verdict) }
                @if verdict.findings > 0 { " — " (verdict.findings) " findings (" (verdict.classes.join(", ")) ")" }
                " · held to " (verdict.anchors) " anchors"
            }
            p {
                "it covered the log of " (verdict.log_size) " leaves, root " code title=(verdict.log_root) { (short(&verdict.log_root)) }
                " · now: " (now)
            }
            @if !verdict.not_checked.is_empty() {
                ul class="not-checked" { @for line in &verdict.not_checked { li { "not checked: " (line) } } }
            }
        }
    }
}

// ----------------------------------------------------------------- the runs

#[derive(Debug, Deserialize)]
pub(crate) struct RunsQuery {
    tenant: Option<String>,
    outcome: Option<String>,
    q: Option<String>,
    /// The cursor: the admission (`MILLIS:RUN`) the page starts below.
    before: Option<String>,
}

pub(crate) async fn runs(State(app): State<Arc<App>>, query: Result<Query<RunsQuery>, QueryRejection>) -> Response {
    let Query(query) = match query {
        Ok(query) => query,
        Err(rejection) => return bad_query(&rejection),
    };
    render(app, move |app| render_runs(app, &query)).await
}

/// A cursor, `MILLIS:RUN`: the last admission of the page before.
fn cursor(text: &str) -> Result<AdmittedRun, PageError> {
    AdmittedRun::from_cursor(text)
        .ok_or_else(|| PageError::bad("before is not a cursor this console wrote (MILLIS:RUN)"))
}

/// The runs a search names: the run with that id, and the run admitted
/// under that idempotency key. Each is a lookup (O(log n)), never a scan.
fn search_runs(
    app: &App,
    log: &TenantLog,
    search: &str,
    outcome: Option<Outcome>,
) -> Result<Vec<AdmittedRun>, PageError> {
    let store = app.plane.store.as_ref();
    let mut candidates: Vec<RunId> = RunId::new(search).ok().into_iter().collect();
    // The run a key admits is derived from it: found whatever the
    // idempotency index (derived data) says; the index's answer is a
    // candidate too, held below to its verified admission.
    candidates.extend(journal_core::Runtime::run_id_for(&log.tenant, search).ok());
    if let Some(run) = store.run_by_idempotency_key(&log.tenant, search)? {
        candidates.push(run);
    }
    candidates.sort();
    candidates.dedup();
    let mut found = Vec::new();
    for run in candidates {
        let stored = match store.read_run_within(&log.tenant, &run, app.max_run_bytes) {
            Ok(stored) => stored,
            Err(JournalError::NotFound { .. }) => continue,
            Err(err) => return Err(err.into()),
        };
        // The filter reads the runs table's column, as the admission order
        // does; each row is held to its verified chain when it is shown.
        if outcome.is_some() && stored.outcome != outcome {
            continue;
        }
        // The instant shown is the admission's, read from its first record's
        // bytes; the row is verified below before anything else is shown.
        let at = stored.rows.first().and_then(journal_core::store::admitted_at_of);
        if let Some(at) = at {
            found.push(AdmittedRun { at, run });
        }
    }
    found.sort_by(|a, b| b.cmp(a));
    Ok(found)
}

/// What the derived rows that put `admitted` on this page claim and its
/// verified chain contradicts (R-AUD-8), in words; `None` when the chain
/// agrees. The admission order's instant is the `at` of the run's
/// `RunAdmitted`; a page filtered by outcome lists only runs whose last
/// conclusion is that outcome; a search by idempotency key finds the run
/// admitted under it. A row someone wrote behind the plane is shown as what
/// it is, never as a run of that outcome, admitted then, or under that key.
fn listing_contradicted(
    admitted: &AdmittedRun,
    verified: &journal_core::VerifiedRun,
    outcome: Option<Outcome>,
    search: Option<&str>,
) -> Option<String> {
    let mut said = Vec::new();
    match verified.admission().and(verified.records.first()).map(|first| first.record.at) {
        Some(at) if at == admitted.at => {}
        Some(at) => {
            said.push(format!("the store's admission order lists it at {}, its admission is at {at}", admitted.at))
        }
        None => said.push(format!("the store's admission order lists it at {}, but it has no admission", admitted.at)),
    }
    if let Some(listed) = outcome {
        let answer = verified.last_conclusion().map(|concluded| concluded.outcome);
        // A run that moved on after the page's listing (resumed and
        // concluded again, its index with it) is shown as it is now, not as
        // a contradiction: nothing behind the plane wrote it.
        if answer != Some(listed) && !verified.moved_on_from(listed) {
            said.push(format!(
                "the store lists it as {listed}, its last conclusion is {}",
                answer.map_or("none", |o| o.as_str())
            ));
        }
    }
    if let Some(search) = search
        && admitted.run.as_str() != search
        && verified.idempotency_key() != Some(search)
    {
        said.push(format!(
            "the store's idempotency index points key {search:?} at it, but its admission carries {}",
            verified.idempotency_key().map_or_else(|| "no key".to_owned(), |key| format!("{:?}", cut(key)))
        ));
    }
    (!said.is_empty()).then(|| format!("NOT as listed: {}", said.join("; ")))
}

fn render_runs(app: &App, query: &RunsQuery) -> Result<Markup, PageError> {
    let log = tenant_of(app, parameter("tenant", &query.tenant)?)?;
    let outcome = match parameter("outcome", &query.outcome)? {
        None => None,
        Some(name) => Some(
            Outcome::ALL
                .into_iter()
                .find(|o| o.as_str() == name)
                .ok_or_else(|| PageError::bad(format!("no outcome {name:?}")))?,
        ),
    };
    let search = parameter("q", &query.q)?;
    let before = parameter("before", &query.before)?.map(cursor).transpose()?;
    let store = app.plane.store.as_ref();
    // Newest first from the store's admission order: one page (and one row
    // past it, to know whether an older page exists) costs O(log n + page).
    let mut shown = match search {
        Some(search) => search_runs(app, log, search, outcome)?,
        None => store.admissions(&log.tenant, before.as_ref(), outcome, PAGE_SIZE + 1)?,
    };
    let older = shown.len() > PAGE_SIZE;
    shown.truncate(PAGE_SIZE);
    let journal = Journal::new(store, &log.tenant, &log.origin);
    // Each row's run read to a fiftieth of the bound: a page of them reads
    // no more than one run page does, however large its runs were made.
    let row_bound = app.max_run_bytes / PAGE_SIZE;
    let rows: Vec<Markup> = shown
        .iter()
        .map(|admitted| {
            let run = &admitted.run;
            let (state, class, steps) = match read_bound(&journal, run, app, row_bound) {
                Ok(verified) => {
                    let state = verified.records.last().map_or("empty", |_| {
                        journal_core::last_conclusion(&verified.records).map_or("running", |c| c.outcome.as_str())
                    });
                    let unvouched = app
                        .plane
                        .record_verifier
                        .as_ref()
                        .map(|verifier| Unvouched::count(&verified.records, verifier.as_ref()))
                        .filter(|counted| !counted.is_none());
                    let records = verified.records.len().to_string();
                    match (listing_contradicted(admitted, &verified, outcome, search), unvouched) {
                        (Some(why), _) => (format!("{state}; {why}"), "bad", records),
                        (None, Some(counted)) => (format!("{state}; {}", unvouched_words(counted)), "warn", records),
                        (None, None) => (state.to_owned(), "good", records),
                    }
                }
                // A newer build's record is not damage (R-VER-4).
                Err(err) if err.is_build_skew() => (skewed_words(&err), "warn", "?".to_owned()),
                Err(JournalError::RunTooLarge { bound, .. }) => (
                    format!("too large to summarise here (its records hold more than {bound} bytes): open its page"),
                    "warn",
                    "?".to_owned(),
                ),
                Err(err) => (format!("does not verify: {err}"), "bad", "?".to_owned()),
            };
            html! {
                tr {
                    td { a href=(run_href(log, run.as_str(), "")) { code { (run) } } }
                    td { (admitted.at) }
                    td class=(class) { (state) }
                    td { (steps) }
                }
            }
        })
        .collect();
    let link = |before: Option<&AdmittedRun>| {
        let mut href = format!("/runs?tenant={}", percent(log.tenant.as_str()));
        if let Some(outcome) = outcome {
            href.push_str(&format!("&outcome={}", outcome.as_str()));
        }
        if let Some(before) = before {
            href.push_str(&format!("&before={}", percent(&before.cursor())));
        }
        href
    };
    Ok(layout(
        "runs",
        html! {
            h1 { "runs of " code { (log.tenant) } }
            form method="get" action="/runs" class="filters" {
                input type="hidden" name="tenant" value=(log.tenant);
                label { "outcome " select name="outcome" {
                    option value="" { "any" }
                    @for o in Outcome::ALL {
                        option value=(o.as_str()) selected[outcome == Some(o)] { (o.as_str()) }
                    }
                } }
                " "
                label { "run id or idempotency key " input type="search" name="q" maxlength=(MAX_PARAMETER) value=(search.unwrap_or("")); }
                " " button type="submit" { "filter" }
            }
            p {
                @match search {
                    Some(_) => { (rows.len()) " runs found" }
                    None => { (rows.len()) " runs on this page, newest first" @if before.is_some() { " (older than the page before)" } }
                }
            }
            table class="runs" {
                thead { tr { th { "run" } th { "admitted" } th { "state (verified chain)" } th { "records" } } }
                tbody { @for row in &rows { (row) } }
            }
            p class="pages" {
                @if before.is_some() { a rel="first" href=(link(None)) { "newest" } " " }
                @if older { @if let Some(last) = shown.last() { a rel="next" href=(link(Some(last))) { "older" } } }
            }
        },
    ))
}

/// A run page's address (`suffix`: "" or "/export"): the tenant and run
/// ids are path segments, percent-encoded, since an id may hold a `/`. An
/// id that is `.` or `..` would be a dot segment, which a browser resolves
/// away (encoded or not) before it asks: such a run is addressed by query
/// (`/run?tenant=..&run=..`) instead.
fn run_href(log: &TenantLog, run: &str, suffix: &str) -> String {
    let (tenant, run) = (percent(log.tenant.as_str()), percent(run));
    let dot_segment = |segment: &str| matches!(segment, "." | "..");
    if dot_segment(&tenant) || dot_segment(&run) {
        format!("/run{suffix}?tenant={tenant}&run={run}")
    } else {
        format!("/run/{tenant}/{run}{suffix}")
    }
}

/// Percent-encodes a path segment or query value (for the pages' own links).
fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

// ------------------------------------------------------------------ a run

pub(crate) async fn run(State(app): State<Arc<App>>, Path((tenant, run)): Path<(String, String)>) -> Response {
    render(app, move |app| render_run(app, &tenant, &run)).await
}

/// A run addressed by query (`/run?tenant=..&run=..`): the form for ids a
/// path segment cannot carry (see [`run_href`]).
#[derive(Debug, Deserialize)]
pub(crate) struct RunQuery {
    tenant: String,
    run: String,
}

pub(crate) async fn run_by_query(
    State(app): State<Arc<App>>,
    query: Result<Query<RunQuery>, QueryRejection>,
) -> Response {
    match query {
        Ok(Query(RunQuery { tenant, run })) => render(app, move |app| render_run(app, &tenant, &run)).await,
        Err(rejection) => bad_query(&rejection),
    }
}

fn render_run(app: &App, tenant: &str, run: &str) -> Result<Markup, PageError> {
    if run.len() > MAX_PARAMETER {
        return Err(PageError::bad("the run id is too long"));
    }
    let log = tenant_of(app, Some(tenant))?;
    let run = RunId::new(run).map_err(|err| PageError::bad(err.to_string()))?;
    let store = app.plane.store.as_ref();
    let verified = match read_bound(&Journal::new(store, &log.tenant, &log.origin), &run, app, app.max_run_bytes) {
        Ok(verified) => verified,
        Err(JournalError::NotFound { .. }) => return Err(PageError::missing(format!("no run {run}"))),
        Err(err @ JournalError::RunTooLarge { .. }) => return Err(err.into()),
        Err(err) => return Ok(layout(run.as_str(), unverified_run(app, log, &run, &err)?)),
    };
    let records = &verified.records;
    let state = RunState::of(records);
    // The timeline draws the records the page shows, as the table lists them.
    let bars = timeline::bars(records.get(..MAX_RECORDS_SHOWN).unwrap_or(records));
    let conclusions: Vec<&VerifiedRecord> =
        records.iter().filter(|r| matches!(r.record.body, RecordBody::RunConcluded(_))).collect();
    let budget = state.budget();
    // Summed and checked, never held at u64::MAX (R-RUN-7): what `runs` shows.
    let used = journal_core::run_state::Totals::of(records);
    let dimensions: [(&str, Option<u64>, Option<u64>); 5] = [
        ("tokens", used.tokens, budget.tokens),
        ("cost (micros)", used.cost_micros, budget.cost_micros),
        ("steps", used.steps, budget.steps),
        ("effects", used.effects, budget.effects),
        ("wall (ms)", used.wall_millis, budget.wall_millis),
    ];
    let outcome = journal_core::last_conclusion(records).map_or("running", |c| c.outcome.as_str());
    let signatures = signatures_said(app, records);
    Ok(layout(
        run.as_str(),
        html! {
            h1 { "run " code { (run) } }
            p {
                span class="good" { "chain verified (" (records.len()) " records)" } " · " (signatures)
                " · state " strong { (outcome) }
                @if let Some(key) = verified.idempotency_key() { " · idempotency key " code { (cut(key)) } }
            }
            p { a class="export" download href=(run_href(log, run.as_str(), "/export")) { "download its export" }
                " (format " (journal_core::export::EXPORT_FORMAT) ", against the last signed checkpoint; check it offline with "
                code { "agentplane verify-export FILE" } ")" }
            @if let Some(fork) = verified.forked_from() {
                p { "forked from " a href=(run_href(log, fork.source_run.as_str(), "")) { code { (fork.source_run) } }
                    " at seq " (fork.at_seq) " (hash " code { (short(&fork.source_hash)) } ")" }
            }
            h2 { "timeline" }
            @if records.len() > MAX_RECORDS_SHOWN { p class="warn" { "of the first " (MAX_RECORDS_SHOWN) " records of " (records.len()) } }
            @if bars.is_empty() { p { "no steps or effects" } } @else { (timeline::svg(&bars)) }
            h2 { "budget" }
            table class="budget" {
                thead { tr { th { "dimension" } th { "used" } th { "ceiling" } } }
                tbody {
                    @for (name, used, ceiling) in dimensions {
                        tr class=[ceiling.filter(|c| used.is_none_or(|used| used > *c)).map(|_| "bad")] {
                            td { (name) }
                            td { @match used { Some(used) => (used), None => "past 2^64-1" } }
                            td { @match ceiling { Some(c) => (c), None => "none" } }
                        }
                    }
                }
            }
            @if !conclusions.is_empty() {
                h2 { "conclusions" }
                ul {
                    @for record in &conclusions {
                        @if let RecordBody::RunConcluded(c) = &record.record.body {
                            li { "seq " (record.stored.seq) ": " strong { (c.outcome.as_str()) } " — " (cut(&c.reason)) }
                        }
                    }
                }
            }
            h2 { "proof" }
            (proof_section(app, log, &run, verified.sealed(), records)?)
            h2 { "records" }
            (records_table(app, records))
        },
    ))
}

/// What the signatures of a run read leniently say (R-SIG-3): a record
/// unsigned, or signed under a key id the plane does not trust, reads as
/// verified beside an intact chain, so the page says how many no key of the
/// plane vouches for rather than calling them verified.
fn signatures_said(app: &App, records: &[VerifiedRecord]) -> Markup {
    let Some(verifier) = &app.plane.record_verifier else {
        return html! { "signatures not checked (no record key given)" };
    };
    let counted = Unvouched::count(records, verifier.as_ref());
    if counted.is_none() {
        return html! { "signatures verified with the plane's record keys" };
    }
    html! { span class="warn" { (unvouched_words(counted)) " (no key of the plane vouches for them)" } }
}

/// What no trusted key vouches for, in words.
fn unvouched_words(counted: Unvouched) -> String {
    format!(
        "NOT all vouched for: {} unsigned and {} signed by a key id this plane does not trust",
        counted.unsigned, counted.untrusted
    )
}

/// What the console says of a run this build cannot read (R-VER-4): build
/// skew, with its remedy (which build wrote it), never a chain that does
/// not verify.
fn skewed_words(err: &JournalError) -> String {
    format!("build skew, not damage: this build of the console cannot read this run: {err}")
}

/// A run whose chain does not verify: the finding, in red, and its rows as
/// stored (nothing read from them is trusted). A run this build cannot read
/// is build skew, said so in the warning's colour, with its remedy.
fn unverified_run(app: &App, log: &TenantLog, run: &RunId, err: &JournalError) -> Result<Markup, PageError> {
    let rows = app.plane.store.read_run_within(&log.tenant, run, app.max_run_bytes)?.rows;
    let (class, said) = if err.is_build_skew() {
        ("warn", skewed_words(err))
    } else {
        ("bad", format!("this run's chain does not verify: {err}"))
    };
    Ok(html! {
        h1 { "run " code { (run) } }
        p class={ (class) " finding" } { (said) }
        table class="records" {
            thead { tr { th { "seq" } th { "kind" } th { "hash (as stored)" } } }
            tbody {
                @for row in rows.iter().take(MAX_RECORDS_SHOWN) {
                    tr class=(class) { td { (row.seq) } td { (row.kind) } td { code { (short(&row.hash.to_string())) } } }
                }
            }
        }
    })
}

fn records_table(app: &App, records: &[VerifiedRecord]) -> Markup {
    let shown = records.get(..MAX_RECORDS_SHOWN).unwrap_or(records);
    // The lenient read accepts a signature by a key id no trusted key has
    // (R-SIG-3): only a signature a trusted key made is shown as verified.
    let checks: Vec<Option<SignatureCheck>> = match &app.plane.record_verifier {
        None => vec![None; shown.len()],
        Some(verifier) => {
            let items: Vec<SignedHash<'_>> = shown
                .iter()
                .filter_map(|record| {
                    record.stored.signature.as_ref().map(|sig| SignedHash {
                        key_id: &sig.key_id,
                        hash: &record.stored.hash,
                        signature: &sig.signature,
                    })
                })
                .collect();
            let mut answers = verifier.verify_many(&items).into_iter();
            shown.iter().map(|record| record.stored.signature.as_ref().and_then(|_| answers.next())).collect()
        }
    };
    html! {
        @if records.len() > MAX_RECORDS_SHOWN { p class="warn" { "the first " (MAX_RECORDS_SHOWN) " records of " (records.len()) } }
        table class="records" {
            thead { tr { th { "seq" } th { "at" } th { "kind" } th { "effect key" } th { "detail" } th { "hash" } th { "signature" } } }
            tbody {
                @for (record, check) in shown.iter().zip(&checks) {
                    tr {
                        td { (record.stored.seq) }
                        td { (record.record.at) }
                        td { (record.stored.kind) }
                        td { @if let Some(key) = &record.stored.effect_key { code { (cut(key)) } } }
                        td { (detail(&record.record.body)) }
                        td { code title=(record.stored.hash) { (short(&record.stored.hash.to_string())) } }
                        td {
                            @match (&record.stored.signature, check) {
                                (None, _) => span class="warn" { "unsigned" },
                                (Some(sig), Some(SignatureCheck::Valid)) => span class="good" { "verified: " code { (sig.key_id) } },
                                (Some(sig), Some(SignatureCheck::UnknownKey)) => span class="warn" { "key not trusted here: " code { (sig.key_id) } },
                                (Some(sig), Some(SignatureCheck::Invalid)) => span class="bad" { "does not verify: " code { (sig.key_id) } },
                                (Some(sig), None) => span class="warn" { "not checked: " code { (sig.key_id) } },
                            }
                        }
                    }
                }
            }
        }
    }
}

/// What a record did, in a few words (agent-supplied text escaped by maud).
fn detail(body: &RecordBody) -> String {
    let text = match body {
        RecordBody::StepStarted(mark) | RecordBody::StepFinished(mark) => mark.step.clone(),
        RecordBody::EffectDone(done) => match &done.result {
            journal_core::EffectResult::Ok { output } => format!("ok: {output}"),
            other => format!("{other:?}"),
        },
        RecordBody::RunConcluded(c) => format!("{}: {}", c.outcome.as_str(), c.reason),
        RecordBody::PlanFrozen(plan) => plan.steps.join(", "),
        other => format!("{:?}", other.kind()),
    };
    text.chars().take(160).collect()
}

/// The leaf that covers the run in the log, its proof verified here, and
/// the cosigned checkpoint that holds it. A heads leaf covers the run only
/// when the head it holds is the verified chain's record at that seq
/// (R-COVER-2); a cosigned checkpoint holds the leaf only when its verified
/// note's own tree does.
fn proof_section(
    app: &App,
    log: &TenantLog,
    run: &RunId,
    sealed: bool,
    records: &[VerifiedRecord],
) -> Result<Markup, PageError> {
    let store = app.plane.store.as_ref();
    let view = LogView::open(store, &log.tenant)?;
    let covered = if sealed {
        view.inclusion(run).map(|inclusion| {
            let verified = inclusion.tree.verify_inclusion(&inclusion.leaf, inclusion.index, &inclusion.proof);
            (
                "seal leaf",
                inclusion.index,
                inclusion.tree,
                inclusion.leaf,
                inclusion.proof.path().len(),
                verified.err().map(|err| err.to_string()),
                None,
            )
        })
    } else {
        view.head_inclusion(run).map(|head| {
            let entry = format!("head at seq {} (hash {})", head.entry.seq, short(&head.entry.hash.to_string()));
            let at_seq = |records: &[VerifiedRecord]| {
                usize::try_from(head.entry.seq)
                    .ok()
                    .and_then(|seq| seq.checked_sub(1))
                    .and_then(|index| records.get(index))
                    .map(|record| record.stored.hash)
            };
            // The chain was read before the log: a leaf past its end may
            // hold a record appended (and covered) since. The chain read
            // again after the leaf holds it unless the run was cut back.
            let chain = at_seq(records).or_else(|| {
                let fresh = Journal::new(store, &log.tenant, &log.origin)
                    .read_within(run, check(app), app.max_run_bytes)
                    .ok()?;
                at_seq(&fresh.records)
            });
            let failed = if chain == Some(head.entry.hash) {
                head.verify().err().map(|err| err.to_string())
            } else {
                Some(format!(
                    "the leaf's head at seq {} does not hold this chain (its record there is {})",
                    head.entry.seq,
                    chain.map_or_else(|| "missing".to_owned(), |hash| short(&hash.to_string()))
                ))
            };
            ("heads leaf", head.index, head.tree, head.leaf, head.proof.path().len(), failed, Some(entry))
        })
    };
    let (kind, index, tree, leaf, path, failed, entry) = match covered {
        Ok(covered) => covered,
        // The chain decides whether the run is sealed, never the store's
        // seal lookup (derived data): a sealed run is not shown as open.
        Err(JournalError::NotSealed { .. } | JournalError::NotFound { .. }) if sealed => {
            return Ok(html! { p class="bad finding" {
                "its last conclusion seals this run, but the store finds no seal of it in the log: the store's seal \
                 lookup does not hold to the chain (" code { "agentplane verify" } ")"
            } });
        }
        Err(JournalError::NotSealed { .. } | JournalError::NotFound { .. }) => {
            return Ok(
                html! { p class="warn" { "no leaf of the log covers this run yet: it moved after the last checkpoint (" code { "agentplane checkpoint" } ")" } },
            );
        }
        Err(err) => return Err(err.into()),
    };
    // The store's covering leaf: the cosigned checkpoint is shown as holding
    // it only when the note's own tree (not the row's) proves it.
    let covered = failed.is_none();
    let cosigned = cosigned_inclusion(store, &view, index, &leaf)?.map(|cosigned| {
        let status = match note_status(app, log, &cosigned.note, None) {
            NoteStatus::Verified { tree, .. } if !covered => NoteStatus::Unverified(format!(
                "its checkpoint of size {} holds the leaf, and the leaf does not cover this run",
                tree.size
            )),
            NoteStatus::Verified { tree, .. } if tree.verify_inclusion(&leaf, index, &cosigned.proof).is_err() => {
                NoteStatus::Unverified(format!("its checkpoint of size {} does not hold leaf {index}", tree.size))
            }
            status => status,
        };
        (cosigned, status)
    });
    Ok(html! {
        p {
            (kind) " " (index) " of the log of " (tree.size) " leaves (root " code title=(tree.root) { (short(&tree.root.to_string())) } ")"
            @if let Some(entry) = &entry { ", holding its " (entry) "; a prefix, not a complete history" }
            " · inclusion proof of " (path) " hashes: "
            @match &failed {
                None => span class="good" { "verified" },
                Some(err) => span class="bad" { "fails: " (err) },
            }
        }
        p {
            "cosigned checkpoint holding it: "
            @match &cosigned {
                None => span class="warn" { "none yet (" code { "agentplane sweep" } ")" },
                Some((cosigned, status)) => {
                    "proof of " (cosigned.proof.path().len()) " hashes · " (note_markup(status))
                }
            }
        }
    })
}

// ------------------------------------------------------------ its export

pub(crate) async fn export(State(app): State<Arc<App>>, Path((tenant, run)): Path<(String, String)>) -> Response {
    export_response(app, tenant, run).await
}

pub(crate) async fn export_by_query(
    State(app): State<Arc<App>>,
    query: Result<Query<RunQuery>, QueryRejection>,
) -> Response {
    match query {
        Ok(Query(RunQuery { tenant, run })) => export_response(app, tenant, run).await,
        Err(rejection) => bad_query(&rejection),
    }
}

async fn export_response(app: Arc<App>, tenant: String, run: String) -> Response {
    let Ok(turn) = Arc::clone(&app.pages).acquire_owned().await else {
        return error_page(StatusCode::SERVICE_UNAVAILABLE, "the console is stopping");
    };
    let exported = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        export_of(&app, &tenant, &run)
    });
    match exported.await {
        Ok(Ok((name, text))) => (
            [
                (header::CONTENT_TYPE, "application/jsonl; charset=utf-8".to_owned()),
                (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
            ],
            text,
        )
            .into_response(),
        Ok(Err(err)) => error_page(err.status, &err.message),
        Err(_) => error_page(StatusCode::INTERNAL_SERVER_ERROR, "the export's worker failed"),
    }
}

/// A run's export (format v4, as `agentplane export` writes it), assembled
/// read-only against the plane's last signed checkpoint: the console never
/// signs. A sealed run carries its seal leaf, an open run the heads leaf
/// holding its head (its records cut there); both with the leaf's inclusion
/// in that checkpoint, and the latest cosigned checkpoint holding the leaf.
fn export_of(app: &App, tenant: &str, run: &str) -> Result<(String, String), PageError> {
    if run.len() > MAX_PARAMETER {
        return Err(PageError::bad("the run id is too long"));
    }
    let log = tenant_of(app, Some(tenant))?;
    let run = RunId::new(run).map_err(|err| PageError::bad(err.to_string()))?;
    let store = app.plane.store.as_ref();
    // Twice a page's bound: an open run's export is cut at the head its
    // checkpoint covers, so its run may hold more than the export carries.
    let bound = app.max_run_bytes.saturating_mul(2);
    let verified = match read_bound(&Journal::new(store, &log.tenant, &log.origin), &run, app, bound) {
        Ok(verified) => verified,
        Err(JournalError::NotFound { .. }) => return Err(PageError::missing(format!("no run {run}"))),
        Err(err @ JournalError::RunTooLarge { .. }) => return Err(err.into()),
        Err(err) if err.is_build_skew() => return Err(PageError::conflict(skewed_words(&err))),
        Err(err) => return Err(PageError::conflict(format!("this run's chain does not verify: {err}"))),
    };
    verified.seal_found(&log.tenant, &run).map_err(|err| PageError::conflict(err.to_string()))?;
    // The export holds the bytes of every record it carries (through the
    // covered seq: an open run's are cut at the head its checkpoint covers)
    // at least once: past the bound by those alone, it is refused before
    // it is built.
    let within_bound = |through: u64| {
        let record_bytes = verified
            .records
            .iter()
            .take_while(|record| record.stored.seq <= through)
            .map(|record| record.stored.bytes.len())
            .fold(0_usize, usize::saturating_add);
        if record_bytes > MAX_EXPORT_BYTES { Err(too_large_to_export(&run, record_bytes)) } else { Ok(()) }
    };
    if app.plane.log_keys.is_empty() {
        return Err(PageError::conflict(
            "no log key given: the console cannot verify the checkpoint an export carries",
        ));
    }
    let signed = store
        .last_signed_checkpoint(&log.tenant)?
        .ok_or_else(|| PageError::conflict("no signed checkpoint yet: `agentplane checkpoint` signs one"))?;
    let verifiers: Vec<&dyn NoteVerifier> = app.plane.log_keys.iter().map(|key| key as &dyn NoteVerifier).collect();
    let (checkpoint, _) = SignedCheckpoint::open(signed.note.as_bytes(), &verifiers)
        .map_err(|err| PageError::conflict(format!("the last signed checkpoint does not verify: {err}")))?;
    let tree = checkpoint.checkpoint().tree();
    let view = LogView::open(store, &log.tenant)?;
    let uncovered = || {
        PageError::conflict(format!(
            "the last signed checkpoint (size {}) does not cover this run yet: `agentplane checkpoint` signs one that \
             does",
            tree.size
        ))
    };
    let prove = |index: u64, leaf: &tlog::LeafHash| -> Result<tlog::InclusionProof, PageError> {
        if index >= tree.size || tree.size > view.size() {
            return Err(uncovered());
        }
        let proof = tlog::prove_inclusion(&view, index, tree.size)
            .map_err(|err| PageError::internal(format!("proving leaf {index} in size {}: {err}", tree.size)))?;
        tree.verify_inclusion(leaf, index, &proof)
            .map_err(|err| PageError::internal(format!("the log does not extend its last signed checkpoint: {err}")))?;
        Ok(proof)
    };
    let covered = |err: JournalError| match err {
        JournalError::NotSealed { .. } | JournalError::NotFound { .. } => uncovered(),
        other => other.into(),
    };
    let text = if verified.seal.is_some() {
        let mut inclusion = view.inclusion(&run).map_err(covered)?;
        inclusion.proof = prove(inclusion.index, &inclusion.leaf)?;
        inclusion.tree = tree;
        within_bound(u64::MAX)?;
        let cosigned = cosigned_inclusion(store, &view, inclusion.index, &inclusion.leaf)?;
        write_export(
            &log.tenant,
            &log.origin,
            &run,
            &verified,
            ExportProof::Seal(&inclusion),
            &checkpoint,
            cosigned.as_ref(),
        )?
    } else {
        let mut head = view.head_inclusion(&run).map_err(covered)?;
        head.proof = prove(head.index, &head.leaf)?;
        head.tree = tree;
        within_bound(head.entry.seq)?;
        let cosigned = cosigned_inclusion(store, &view, head.index, &head.leaf)?;
        write_export(
            &log.tenant,
            &log.origin,
            &run,
            &verified,
            ExportProof::Head(&head),
            &checkpoint,
            cosigned.as_ref(),
        )?
    };
    if text.len() > MAX_EXPORT_BYTES {
        return Err(too_large_to_export(&run, text.len()));
    }
    let name: String =
        run.as_str().chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    Ok((format!("{name}.export.jsonl"), text))
}

/// A run whose export is past what the console serves (at least `bytes`).
fn too_large_to_export(run: &RunId, bytes: usize) -> PageError {
    PageError {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        message: format!(
            "this run's export is at least {bytes} bytes, over the console's {MAX_EXPORT_BYTES}: use `agentplane export \
             {run} -o FILE`"
        ),
    }
}

// ----------------------------------------------------------------- a diff

#[derive(Debug, Deserialize)]
pub(crate) struct DiffQuery {
    tenant: Option<String>,
    a: Option<String>,
    b: Option<String>,
}

pub(crate) async fn diff(State(app): State<Arc<App>>, query: Result<Query<DiffQuery>, QueryRejection>) -> Response {
    let Query(query) = match query {
        Ok(query) => query,
        Err(rejection) => return bad_query(&rejection),
    };
    render(app, move |app| render_diff(app, &query)).await
}

fn render_diff(app: &App, query: &DiffQuery) -> Result<Markup, PageError> {
    let log = tenant_of(app, parameter("tenant", &query.tenant)?)?;
    let (Some(a), Some(b)) = (parameter("a", &query.a)?, parameter("b", &query.b)?) else {
        return Ok(layout(
            "diff",
            html! {
                h1 { "diff two runs" }
                form method="get" action="/diff" {
                    input type="hidden" name="tenant" value=(log.tenant);
                    label { "run a " input name="a" maxlength=(MAX_PARAMETER); } " "
                    label { "run b " input name="b" maxlength=(MAX_PARAMETER); } " "
                    button type="submit" { "compare" }
                }
            },
        ));
    };
    let journal = Journal::new(app.plane.store.as_ref(), &log.tenant, &log.origin);
    let read = |name: &str| -> Result<Vec<VerifiedRecord>, PageError> {
        let run = RunId::new(name).map_err(|err| PageError::bad(err.to_string()))?;
        Ok(read_bound(&journal, &run, app, app.max_run_bytes)?.records)
    };
    let (left, right) = (read(a)?, read(b)?);
    let positions = left.len().max(right.len());
    let length = positions.min(MAX_RECORDS_SHOWN);
    // The CLI's `diff` compares with the same function: the two never
    // disagree. Every position is compared, not only the rows shown: two
    // runs that part past them are not the same.
    let first = journal_core::compare::first_difference(&left, &right, positions);
    // The lenient read accepts records no trusted key signed (R-SIG-3): a
    // sameness resting on them is not shown as good, and each run's
    // signatures are said below, as its run page says them.
    let vouched = app.plane.record_verifier.as_ref().is_none_or(|verifier| {
        Unvouched::count(&left, verifier.as_ref()).is_none() && Unvouched::count(&right, verifier.as_ref()).is_none()
    });
    let side = |record: Option<&VerifiedRecord>| -> Markup {
        match record {
            None => html! { td class="absent" { "—" } },
            Some(record) => html! {
                td { (record.stored.seq) " " (record.stored.kind)
                    @if let Some(key) = &record.stored.effect_key { " " code { (cut(key)) } }
                    " " (detail(&record.record.body)) }
            },
        }
    };
    Ok(layout(
        "diff",
        html! {
            h1 { "diff " code { (a) } " · " code { (b) } }
            p { "both chains verified · " @match first {
                None => span class=(if vouched { "good" } else { "warn" }) { "the runs did the same" },
                Some(i) if i < length => span class="bad" { a href="#first-difference" { "first difference at position " (i + 1) } },
                Some(i) => span class="bad" { "first difference at position " (i + 1) ", past the first " (MAX_RECORDS_SHOWN)
                    " positions shown (" code { "agentplane diff" } " shows them all)" },
            } }
            @if positions > length { p class="warn" { "the first " (length) " positions of " (positions) } }
            p { code { (a) } ": " (signatures_said(app, &left)) }
            p { code { (b) } ": " (signatures_said(app, &right)) }
            table class="diff" {
                thead { tr { th { "#" } th { (a) } th { (b) } } }
                tbody {
                    @for i in 0..length {
                        @let same = journal_core::compare::same_at(left.get(i), right.get(i));
                        tr id=[(first == Some(i)).then_some("first-difference")] class=(if same { "same" } else { "different" }) {
                            td { (i + 1) } (side(left.get(i))) (side(right.get(i)))
                        }
                    }
                }
            }
        },
    ))
}

// ------------------------------------------------------------------ the log

#[derive(Debug, Deserialize)]
pub(crate) struct LogQuery {
    tenant: Option<String>,
    from: Option<u64>,
    to: Option<u64>,
}

pub(crate) async fn log(State(app): State<Arc<App>>, query: Result<Query<LogQuery>, QueryRejection>) -> Response {
    let Query(query) = match query {
        Ok(query) => query,
        Err(rejection) => return bad_query(&rejection),
    };
    render(app, move |app| render_log(app, &query)).await
}

/// How many of the newest signed checkpoint rows the log page verifies,
/// draws and lists.
const LOG_PAGE_CHECKPOINTS: usize = 200;

fn render_log(app: &App, query: &LogQuery) -> Result<Markup, PageError> {
    let log = tenant_of(app, parameter("tenant", &query.tenant)?)?;
    let store = app.plane.store.as_ref();
    let view = LogView::open(store, &log.tenant)?;
    let head = view.head()?.tree;
    let newest = store.newest_checkpoints(&log.tenant, CheckpointRows::Signed, LOG_PAGE_CHECKPOINTS)?;
    let consistency = match (query.from, query.to) {
        (Some(from), Some(to)) => Some(match view.consistency(from, to) {
            Ok(proof) => match proof.new.extends(&proof.old, &proof.proof) {
                Ok(()) => {
                    html! { span class="good" { "size " (to) " extends size " (from) ": consistency proof of " (proof.proof.path().len()) " hashes verified" } }
                }
                Err(err) => html! { span class="bad" { "the proof fails: " (err) } },
            },
            Err(err) => html! { span class="bad" { (err) } },
        }),
        _ => None,
    };
    // The chart draws what a note vouches for, at the size the note signs: a
    // kept row whose note does not verify is counted apart, never drawn.
    // Only the newest rows are read, verified and shown: a page load stays
    // bounded on a plane that has signed for years.
    let statuses: Vec<NoteStatus> = newest.iter().map(|s| note_status(app, log, &s.note, Some(s.tree))).collect();
    let drawn: Vec<u64> = statuses
        .iter()
        .filter_map(|status| match status {
            NoteStatus::Verified { tree, .. } => Some(tree.size),
            NoteStatus::Unverified(_) | NoteStatus::NoLogKey => None,
        })
        .collect();
    let unverified = statuses.iter().filter(|status| matches!(status, NoteStatus::Unverified(_))).count();
    let no_log_key = app.plane.log_keys.is_empty();
    let largest = drawn.iter().copied().max().unwrap_or(0).max(1);
    let bar_width = 600u64;
    Ok(layout(
        "log",
        html! {
            h1 { "the log of " code { (log.tenant) } }
            p { "origin " code { (log.origin) } " · " (head.size) " leaves · root " code { (head.root) } }
            h2 { "checkpoints over time" }
            p {
                "the newest " (newest.len()) " signed checkpoint rows kept read (at most " (LOG_PAGE_CHECKPOINTS) "): "
                (drawn.len()) " verified"
            }
            @if no_log_key {
                p class="warn" { "no log key given: no kept checkpoint can be verified, so none is drawn" }
            }
            @if unverified > 0 {
                p class="bad" {
                    (unverified) @if unverified == 1 { " kept row does not verify" } @else { " kept rows do not verify" }
                    " (marked in the table below): not drawn; run " code { "agentplane verify" } " on this plane"
                }
            }
            svg class="sizes" xmlns="http://www.w3.org/2000/svg" width=(bar_width + 60) height=(drawn.len() * 14 + 4) role="img" aria-label="verified signed checkpoint sizes" {
                @for (i, size) in drawn.iter().enumerate() {
                    @let width = size.saturating_mul(bar_width) / largest;
                    rect class="size" x="0" y=(i * 14 + 2) height="10" width=(width + 1) {
                        title { "size " (size) }
                    }
                    text x=(width + 6) y=(i * 14 + 11) class="axis" { (size) }
                }
            }
            h2 { "consistency between two sizes" }
            form method="get" action="/log" {
                input type="hidden" name="tenant" value=(log.tenant);
                label { "from " input type="number" name="from" min="1" max=(head.size) value=[query.from]; } " "
                label { "to " input type="number" name="to" min="1" max=(head.size) value=[query.to]; } " "
                button type="submit" { "prove" }
            }
            @if let Some(consistency) = consistency { p { (consistency) } }
            h2 { "signed checkpoints" }
            table {
                thead { tr { th { "size" } th { "root" } th { "signature" } } }
                tbody {
                    @for (s, status) in newest.iter().zip(&statuses).rev() {
                        tr { td { (s.tree.size) } td { code { (short(&s.tree.root.to_string())) } } td { (note_markup(status)) } }
                    }
                }
            }
        },
    ))
}

/// A cosignature's time (seconds since the epoch) as the instants the
/// console shows; one past what an instant holds is said as its seconds.
fn cosigned_at(seconds: u64) -> String {
    i64::try_from(seconds)
        .ok()
        .and_then(|seconds| seconds.checked_mul(1000))
        .and_then(|millis| journal_core::At::from_unix_millis(millis).ok())
        .map_or_else(|| format!("{seconds} s after the epoch, past what an instant holds here"), |at| at.to_string())
}
