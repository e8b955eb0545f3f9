//! `agentplane-bench`: every performance figure of agentplane beside its
//! baseline, measured alternately in this one run, written as a Markdown
//! table and a JSON file. `cargo xtask bench [--quick]` builds and runs it.
//!
//! ```text
//! agentplane-bench [--quick] [--only GROUP]... [--out DIR] [--oracle GO_ORACLE] [--agentplane BINARY]
//!                  [--litewitness URL --litewitness-vkey VKEY --litewitness-logs SKEY_FILE]
//! ```
//! PostgreSQL figures run when `AGENTPLANE_PG_URL` names a server.
//! `--quick` is a smoke run (tiny sizes, one round): it proves every figure
//! still runs and asserts nothing about speed.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

/// mimalloc, not the system allocator: the audit's reader allocates every
/// record and its workers free them on other threads, which glibc's malloc
/// pays for in arena locks and consolidation (about a seventh of the
/// audit workers' time in the profile of issue 25).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod append;
mod audit_figures;
mod checkpoint_figures;
mod console_figures;
mod live_figures;
mod measure;
mod scale_figures;
mod tlog_figures;
mod witness_figures;

use append::Backend;
use measure::Figure;

struct Options {
    quick: bool,
    out: PathBuf,
    oracle: Option<PathBuf>,
    agentplane: Option<PathBuf>,
    /// Litewitness's URL, verifier key, and the file of its logs' skeys.
    litewitness: (Option<String>, Option<String>, Option<PathBuf>),
    /// Only these groups (tlog, append, checkpoint, audit, witness, cost, live); all when empty.
    only: Vec<String>,
}

impl Options {
    fn wants(&self, group: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|g| g == group)
    }
}

fn options() -> Result<Options> {
    let mut options = Options {
        quick: false,
        out: PathBuf::from("target/bench"),
        oracle: None,
        agentplane: None,
        litewitness: (None, None, None),
        only: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => options.quick = true,
            "--litewitness" => options.litewitness.0 = Some(args.next().context("--litewitness needs a URL")?),
            "--litewitness-vkey" => {
                options.litewitness.1 = Some(args.next().context("--litewitness-vkey needs a vkey")?)
            }
            "--litewitness-logs" => {
                options.litewitness.2 = Some(args.next().context("--litewitness-logs needs a file")?.into());
            }
            "--only" => options.only.push(args.next().context(
                "--only needs a group: tlog, append, checkpoint, audit, scale, witness, mldsa, cost, live or console",
            )?),
            "--out" => options.out = args.next().context("--out needs a directory")?.into(),
            "--oracle" => options.oracle = Some(args.next().context("--oracle needs the Go oracle's path")?.into()),
            "--agentplane" => {
                let path: PathBuf = args.next().context("--agentplane needs the binary's path")?.into();
                // It runs in a plane's directory: a relative path would be read from there.
                options.agentplane =
                    Some(path.canonicalize().with_context(|| format!("--agentplane {}", path.display()))?);
            }
            other => bail!(
                "unknown argument {other:?}; usage: agentplane-bench [--quick] [--out DIR] [--oracle PATH] [--agentplane PATH]"
            ),
        }
    }
    Ok(options)
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("agentplane-bench: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn progress(figures: &[Figure]) {
    for figure in figures {
        eprintln!("{}", figure.markdown_row());
    }
}

fn run() -> Result<()> {
    let options = options()?;
    let rounds = if options.quick { 1 } else { 5 };
    let postgres = std::env::var_os(store_pg::testkit::URL_VARIABLE).is_some();
    let mut figures = Vec::new();
    let mut add = |mut more: Vec<Figure>| {
        progress(&more);
        figures.append(&mut more);
    };

    if options.wants("tlog") {
        add(tlog_figures::figures(rounds, if options.quick { 10 } else { 20 }, options.oracle.as_deref())?);
    }
    if options.wants("append") {
        add(append::figures(Backend::Redb, rounds, options.quick)?);
        if postgres {
            add(append::figures(Backend::Postgres, rounds, options.quick)?);
        }
    }
    if options.wants("checkpoint") {
        add(checkpoint_figures::figures(Backend::Redb, rounds, options.quick)?);
        if postgres {
            add(checkpoint_figures::figures(Backend::Postgres, rounds, options.quick)?);
        }
    }
    let runs = if options.quick { 50 } else { 20_000 };
    if options.wants("audit") {
        let (audit, filled) = audit_figures::audit_figures(Backend::Redb, rounds, runs)?;
        add(audit);
        add(audit_figures::storage_figures(Backend::Redb, &filled)?);
        drop(filled);
        if postgres {
            let pg_runs = if options.quick { 50 } else { 5_000 };
            let (audit, filled) = audit_figures::audit_figures(Backend::Postgres, rounds, pg_runs)?;
            add(audit);
            add(audit_figures::storage_figures(Backend::Postgres, &filled)?);
        }
    }
    if let (Some(url), Some(vkey), Some(logs)) = &options.litewitness
        && options.wants("witness")
    {
        let text = std::fs::read_to_string(logs).with_context(|| format!("reading {}", logs.display()))?;
        let log_keys = text
            .lines()
            .map(|line| witness::SignerKey::parse(line).map_err(|err| anyhow::anyhow!("a log skey: {err}")))
            .collect::<Result<Vec<_>>>()?;
        let lite = witness_figures::Litewitness { url: url.clone(), vkey: vkey.clone(), log_keys };
        add(witness_figures::figures(rounds, options.quick, &lite)?);
    }
    if options.wants("mldsa") {
        add(witness_figures::ml_dsa_figures(rounds, options.quick)?);
    }
    if let Some(agentplane) = options.agentplane.as_ref().filter(|_| options.wants("cost")) {
        add(audit_figures::cost_figures(agentplane, rounds, runs)?);
    }
    if options.wants("scale") {
        add(scale_figures::figures(Backend::Redb, rounds, options.quick)?);
        if postgres {
            add(scale_figures::figures(Backend::Postgres, rounds, options.quick)?);
        }
    }
    if options.wants("console") {
        add(console_figures::figures(rounds, if options.quick { 1_000 } else { 100_000 })?);
    }
    if let Some(agentplane) = options.agentplane.as_ref().filter(|_| options.wants("live")) {
        add(live_figures::figures(agentplane, rounds, options.quick)?);
    }

    let machine = machine();
    let date = today();
    let mut markdown = format!(
        "Measured {date} on {machine}; {rounds} alternating rounds per figure, medians{}.\n\n\
         | figure | ours | baseline (same run) | ratio | bar |\n| --- | --- | --- | --- | --- |\n",
        if options.quick { " (--quick: a smoke run, not a measurement)" } else { "" }
    );
    for figure in &figures {
        markdown.push_str(&figure.markdown_row());
        markdown.push('\n');
    }
    let json = serde_json::json!({
        "date": date,
        "machine": machine,
        "quick": options.quick,
        "rounds": rounds,
        "figures": figures.iter().map(Figure::json).collect::<Vec<_>>(),
    });
    std::fs::create_dir_all(&options.out).with_context(|| format!("creating {}", options.out.display()))?;
    let name = if options.quick { "quick" } else { "bench" };
    std::fs::write(options.out.join(format!("{name}.md")), &markdown)?;
    std::fs::write(options.out.join(format!("{name}.json")), serde_json::to_string_pretty(&json)?)?;
    println!("{markdown}");
    eprintln!("agentplane-bench: wrote {}/{name}.md and {name}.json", options.out.display());
    Ok(())
}

/// The machine, as a reader of the table needs it: cores and CPU model.
fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                line.strip_prefix("model name").map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_else(|| "an unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    format!("{cores} cores, {model}")
}

/// Today's date (UTC), from the system clock.
fn today() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    journal_core::At::from_unix_millis(i64::try_from(now).unwrap_or(i64::MAX)).map_or_else(
        |_| "today".to_owned(),
        |at| at.to_string().get(..10).map_or_else(|| at.to_string(), str::to_owned),
    )
}
