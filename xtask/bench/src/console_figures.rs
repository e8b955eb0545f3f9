//! The console's runs page (issue 27) on a plane of 100,000 runs on redb:
//! the server time of the first page, a page filtered by outcome, a search
//! by idempotency key and a page 50,000 runs deep, each beside the issue's
//! bar of 200 ms. The server time is the console's own `Server-Timing`
//! header (reading, verifying and rendering the page), read over HTTP.

use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use journal_core::runtime::EffectOutput;
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, Ed25519Verifier, EffectResult, RuntimeBuilder, Signer as _, Store,
};

use crate::append::{record_signer, tenant};
use crate::measure::{Figure, Unit, for_each_on_64_threads, median};

/// The bar: server time of one runs page, in nanoseconds.
const BAR_NANOS: f64 = 200e6;
/// Requests per page kind per round.
const REQUESTS: usize = 5;

/// The five figures, on a fresh redb plane of `runs` runs (a quarter failed).
pub fn figures(rounds: usize, runs: usize) -> Result<Vec<Figure>> {
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn Store> = Arc::new(store_redb::RedbStore::create(&dir.path().join("journal.redb"))?);
    let (tenant, origin) = tenant()?;
    let signer = record_signer();
    let runtime = RuntimeBuilder::new(Arc::clone(&store))
        .signer(Arc::new(signer.clone()))
        .tenant(tenant.clone(), origin.clone(), None)
        .build()?;
    for_each_on_64_threads(runs, |n| {
        let request = AdmitRequest {
            idempotency_key: format!("bench-{n}"),
            plan: vec!["work".into()],
            budget: Budget::default(),
        };
        let Admission::New(mut run) = runtime.admit(&tenant, request)? else { bail!("bench-{n} was admitted twice") };
        run.start_step("work")?;
        run.effect("ek:work", "work", || EffectOutput {
            result: EffectResult::Ok { output: format!("output of run {n}") },
            charged: Counters { tokens: 100, ..Counters::default() },
        })?;
        if n % 4 == 0 {
            run.fail("the bench fails a quarter")?;
        } else {
            run.finish_step("work")?;
            run.succeed("done")?;
        }
        Ok(())
    })?;
    drop(runtime);
    let deep =
        store.admissions(&tenant, None, None, runs / 2)?.pop().ok_or_else(|| anyhow!("the plane lists no run"))?;
    let mut verifier = Ed25519Verifier::new();
    verifier.trust(signer.key_id(), signer.public_key()).map_err(|err| anyhow!("{err}"))?;
    let view = console::PlaneView {
        store: Arc::clone(&store),
        tenants: vec![console::TenantLog { tenant: tenant.clone(), origin }],
        record_verifier: Some(Arc::new(verifier)),
        log_keys: Vec::new(),
        witnesses: Vec::new(),
        upcasters: journal_core::Upcasters::builtin(),
        folder: None,
    };
    let options = console::ConsoleOptions { listen: "127.0.0.1:0".parse()?, token: None, ..Default::default() };
    let served = console::Console::start(view, options)?;
    let client = reqwest::blocking::Client::new();
    let pages = [
        ("the first page", "/runs".to_owned()),
        ("a page filtered by outcome (failed: a quarter of the runs)", "/runs?outcome=failed".to_owned()),
        (
            "a page filtered by an outcome no run has (quarantined: the worst case, the whole order read)",
            "/runs?outcome=quarantined".to_owned(),
        ),
        ("a search by idempotency key", format!("/runs?q=bench-{}", runs / 3)),
        ("a page 50% deep (from its cursor)", format!("/runs?before={}%3A{}", deep.at.unix_millis(), deep.run)),
    ];
    let mut figures = Vec::new();
    for (what, path) in pages {
        let url = format!("{}{path}", served.url());
        let mut times = Vec::new();
        for _ in 0..rounds {
            for _ in 0..REQUESTS {
                times.push(server_nanos(&client, &url, !path.contains("quarantined"))?);
            }
        }
        figures.push(Figure {
            name: format!("console runs page, {what}, redb, {runs} runs: server time"),
            ours: median(times),
            baseline_name: "the issue's bar".to_owned(),
            baseline: BAR_NANOS,
            unit: Unit::Nanos,
            bar: Some(1.0),
            rounds,
        });
    }
    Ok(figures)
}

/// One request's server time, from its `Server-Timing: page;dur=MS`.
fn server_nanos(client: &reqwest::blocking::Client, url: &str, lists_runs: bool) -> Result<f64> {
    let response = client.get(url).send().with_context(|| format!("GET {url}"))?;
    if !response.status().is_success() {
        bail!("GET {url}: {}", response.status());
    }
    let timing = response
        .headers()
        .get("server-timing")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("page;dur="))
        .and_then(|ms| ms.parse::<f64>().ok())
        .ok_or_else(|| anyhow!("GET {url}: no Server-Timing header"))?;
    let body = response.text()?;
    if body.contains("href=\"/run/") != lists_runs {
        bail!("GET {url}: the page {} runs", if lists_runs { "lists no" } else { "lists" });
    }
    Ok(timing * 1e6)
}
