//! A test helper: one of several processes admitting and sealing runs on one
//! PostgreSQL database at once (`pg-writer URL TENANT PREFIX COUNT`); with
//! `PG_WRITER_WAIT_FOR_START` set it opens the store only once a line arrives
//! on its standard input.

use std::process::ExitCode;
use std::sync::Arc;

use journal_core::{
    Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, Origin, RuntimeBuilder, Store, TenantId,
};
use store_pg::PgStore;

/// Set: the writer waits for a line on its standard input before it opens
/// the store, so a test can start several at the same moment.
const WAIT_FOR_START: &str = "PG_WRITER_WAIT_FOR_START";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("pg-writer: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, tenant, prefix, count] = args.as_slice() else {
        return Err("usage: pg-writer URL TENANT PREFIX COUNT".into());
    };
    let count: u32 = count.parse()?;
    if std::env::var_os(WAIT_FOR_START).is_some() {
        // A barrier: the test releases every writer at once by writing a line.
        std::io::stdin().read_line(&mut String::new())?;
    }
    let opened = PgStore::open(url)?;
    if let Some((from, to)) = opened.migrated() {
        println!("migrated {from} {to}");
    }
    let store: Arc<dyn Store> = Arc::new(opened);
    let tenant = TenantId::new(tenant)?;
    let runtime =
        RuntimeBuilder::new(store).tenant(tenant.clone(), Origin::new("pg.test/concurrent")?, None).build()?;
    for i in 0..count {
        let request = AdmitRequest {
            idempotency_key: format!("{prefix}-{i}"),
            plan: vec!["work".into()],
            budget: Budget::default(),
        };
        let Admission::New(mut run) = runtime.admit(&tenant, request)? else {
            return Err(format!("{prefix}-{i} was admitted before").into());
        };
        run.effect("ek:work", "work", || EffectOutput {
            result: EffectResult::Ok { output: format!("{prefix}-{i}") },
            charged: Counters { tokens: 1, ..Counters::default() },
        })?;
        run.succeed("done")?;
    }
    Ok(())
}
