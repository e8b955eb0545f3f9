//! A test helper: one of several processes admitting and sealing runs on one
//! PostgreSQL database at once (`pg-writer URL TENANT PREFIX COUNT`).

use std::process::ExitCode;
use std::sync::Arc;

use journal_core::{
    Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, Origin, RuntimeBuilder, Store, TenantId,
};
use store_pg::PgStore;

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
    let store: Arc<dyn Store> = Arc::new(PgStore::open(url)?);
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
