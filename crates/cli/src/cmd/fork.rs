//! `agentplane fork RUN --at SEQ`: a new run whose journal records where it
//! came from; agent code resuming it is served the source's effects up to there.

use journal_core::{Admission, AdmitRequest, Budget};

use crate::args::run_id;
use crate::config::Settings;
use crate::context::Plane;
use crate::failure::Failure;

/// `agentplane fork RUN --at SEQ [--key KEY]`: prints the new run's id.
pub fn fork(settings: &Settings, run: &str, at: u64, key: Option<&str>) -> Result<(), Failure> {
    let plane = Plane::open(settings, false)?;
    let runtime = plane.runtime()?;
    let source = run_id(run)?;
    let key = key.map_or_else(|| format!("fork-of-{source}-at-{at}"), str::to_owned);
    // The fork follows the source's frozen plan.
    let plan = plane.read(&source)?.plan().map(<[String]>::to_vec).unwrap_or_default();
    let request = AdmitRequest { idempotency_key: key, plan, budget: Budget::default() };
    match runtime.fork(&plane.tenant, &source, at, request)? {
        Admission::New(handle) => outln!("{}", handle.run()),
        Admission::Existing { run, status } => {
            return Err(Failure::Usage(format!("that fork exists already: run {run} ({status})")));
        }
    }
    Ok(())
}
