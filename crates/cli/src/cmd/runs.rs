//! `agentplane runs`: every run of the tenant, its figures read through
//! chain verification; a run whose chain does not verify is listed with its
//! problem and no figures.

use journal_core::{AdmittedRun, At, Outcome, RunId, TimeWindow, Unvouched, VerifiedRun};
use serde::Serialize;

use crate::config::Settings;
use crate::context::{Reader, SignatureRead, strictly, unvouched, unvouched_said};
use crate::failure::{Class, Failure};
use crate::output::print_json;

/// A row of `runs` (and of the demo's summary). The JSON of a row is an
/// object with `run` and `verified`; the fields are in alphabetical order,
/// as the JSON has always been printed.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum RunRow {
    /// A run whose chain verified, with its figures.
    Verified(Figures),
    /// A run whose chain did not verify: its problem, no figures.
    Unverified(Problem),
}

/// A verified run's figures.
#[derive(Debug, Serialize)]
pub struct Figures {
    /// The last conclusion's outcome; `None` while the run runs.
    pub outcome: Option<&'static str>,
    /// The run's log position, when sealed.
    pub position: Option<u64>,
    /// How many records.
    pub records: usize,
    /// The run.
    pub run: String,
    /// Whether the run is sealed.
    pub sealed: bool,
    /// Tokens charged, by the chain's records; `None` (null) past
    /// `u64::MAX`, never a figure held at the limit (R-RUN-7).
    pub tokens: Option<u64>,
    /// How many of its records carry no signature; `None` (null) when
    /// signatures were not checked.
    pub unsigned: Option<u64>,
    /// How many of its records are signed by a key id the reader does not
    /// trust; `None` (null) when signatures were not checked.
    pub untrusted: Option<u64>,
    /// Always `true`: its chain verified. Whether a trusted key vouches for
    /// every record is `unsigned` and `untrusted` (R-SIG-3's lenient read).
    pub verified: bool,
}

/// An unverifiable run.
#[derive(Debug, Serialize)]
pub struct Problem {
    /// The class of the problem: `findings` (tamper or damage), `build_skew`
    /// (this build cannot read it) or `usage`.
    pub class: Class,
    /// Why its chain does not verify.
    pub problem: String,
    /// The run.
    pub run: String,
    /// Always `false`.
    pub verified: bool,
}

impl RunRow {
    fn of(run: &RunId, verified: &VerifiedRun, vouched: Option<Unvouched>) -> Self {
        Self::Verified(Figures {
            outcome: verified.last_conclusion().map(|c| c.outcome.as_str()),
            position: verified.seal.as_ref().map(|s| s.position),
            records: verified.records.len(),
            run: run.to_string(),
            sealed: verified.seal.is_some(),
            tokens: super::cost::Totals::of(&verified.records).tokens,
            unsigned: vouched.map(|counted| counted.unsigned),
            untrusted: vouched.map(|counted| counted.untrusted),
            verified: true,
        })
    }
}

/// What no trusted key vouches for in a run read: `None` when the reader
/// checks no signature.
pub type Vouched<'a> = &'a dyn Fn(&VerifiedRun) -> Option<Unvouched>;

/// One row per run whose answer is `outcome` (every run when `None`), each
/// read by `read`, its records no trusted key vouches for counted by
/// `vouched`. A storage failure stops the listing; any other failure to read
/// a run is that run's problem.
pub fn run_rows(
    store: &dyn journal_core::Store,
    tenant: &journal_core::TenantId,
    outcome: Option<Outcome>,
    read: &dyn Fn(&RunId) -> Result<VerifiedRun, Failure>,
    vouched: Vouched<'_>,
) -> Result<Vec<RunRow>, Failure> {
    rows_of(store.runs(tenant, outcome)?.into_iter().map(|run| (run, None)).collect(), outcome, read, vouched)
}

/// One row per run of `runs`, each read by `read`, as [`run_rows`]. The
/// runs were listed under `outcome` by a derived index (the outcome index,
/// or the runs table's outcome column for a page): a run whose verified
/// chain did not conclude so is listed as unverified, with what the index
/// claimed and what the chain says, never among the runs of that outcome.
/// A run a page lists comes with the instant the admission order lists it
/// at, held alike to its verified admission.
fn rows_of(
    runs: Vec<(RunId, Option<At>)>,
    outcome: Option<Outcome>,
    read: &dyn Fn(&RunId) -> Result<VerifiedRun, Failure>,
    vouched: Vouched<'_>,
) -> Result<Vec<RunRow>, Failure> {
    let mut rows = Vec::new();
    for (run, listed_at) in runs {
        let verified = match read(&run) {
            // Resumed and concluded again since the index listed it (a live
            // plane), its index with it: no longer of that outcome, and no
            // contradiction of its chain.
            Ok(verified) if outcome.is_some_and(|listed| verified.moved_on_from(listed)) => continue,
            read => read,
        };
        let verified = verified.and_then(|verified| {
            listed_as(&run, &verified, outcome)?;
            admitted_as(&run, &verified, listed_at)?;
            Ok(verified)
        });
        rows.push(row_of(run, verified, vouched)?);
    }
    Ok(rows)
}

/// The row of `run` read as `verified`: its figures, or its problem. A
/// storage failure is no run's problem: it stops the listing.
fn row_of(run: RunId, verified: Result<VerifiedRun, Failure>, vouched: Vouched<'_>) -> Result<RunRow, Failure> {
    match verified {
        // The store's seal lookup is derived data: a run whose verified
        // chain seals it and of which the store finds no seal is not listed
        // as open (R-RUN-2), nor its position as unknown.
        Ok(verified) if verified.seal.is_none() && verified.sealed() => Ok(RunRow::Unverified(Problem {
            class: Class::Findings,
            problem: format!(
                "its last conclusion ({}) seals it, but the store finds no seal of it in the log: the store's seal \
                 lookup does not hold to the chain (run `agentplane verify`)",
                verified.last_conclusion().map_or("none", |concluded| concluded.outcome.as_str())
            ),
            run: run.to_string(),
            verified: false,
        })),
        Ok(verified) => Ok(RunRow::of(&run, &verified, vouched(&verified))),
        Err(Failure::Io(message)) => Err(Failure::Io(message)),
        Err(problem) => Ok(RunRow::Unverified(Problem {
            class: problem.class(),
            problem: problem.message(),
            run: run.to_string(),
            verified: false,
        })),
    }
}

/// Whether the verified chain of `run` concluded as the index that listed it
/// under `outcome` says (R-RUN-3, R-AUD-8): the chain's last conclusion is
/// the run's answer, the index only a claim about it.
fn listed_as(run: &RunId, verified: &VerifiedRun, outcome: Option<Outcome>) -> Result<(), Failure> {
    let Some(listed) = outcome else {
        return Ok(());
    };
    let answer = verified.last_conclusion().map(|concluded| concluded.outcome);
    if answer == Some(listed) {
        return Ok(());
    }
    Err(Failure::Findings(format!(
        "the store's outcome index lists run {run} as {listed}, but its verified chain's last conclusion is {}: \
         the index does not hold to the chain (run `agentplane verify`)",
        answer.map_or("none (running)", |o| o.as_str())
    )))
}

/// Whether the verified chain of `run` was admitted at `listed_at`, the
/// instant the admission order (derived data, R-AUD-8) lists it at: a row
/// written behind the plane, or by a process whose clock lied, would
/// otherwise list a run twice across pages, or out of its place.
fn admitted_as(run: &RunId, verified: &VerifiedRun, listed_at: Option<At>) -> Result<(), Failure> {
    let Some(listed_at) = listed_at else {
        return Ok(());
    };
    let admitted = verified.admission().and(verified.records.first()).map(|first| first.record.at);
    if admitted == Some(listed_at) {
        return Ok(());
    }
    Err(Failure::Findings(format!(
        "the store's admission order lists run {run} at {listed_at}, but its verified chain {}: the order does not \
         hold to the chain (run `agentplane verify`)",
        admitted.map_or_else(|| "has no admission".to_owned(), |at| format!("was admitted at {at}"))
    )))
}

/// The rows as a table.
pub fn print_table(rows: &[RunRow]) {
    outln!("{:<30} {:<12} {:>7} {:>7} {:>8}", "RUN", "OUTCOME", "RECORDS", "SEALED", "TOKENS");
    for row in rows {
        match row {
            // A problem quotes what it could not read: no control
            // character of it reaches the terminal, nor a line of its own.
            RunRow::Unverified(Problem { problem, run, .. }) => {
                outln!("{run:<30} UNVERIFIED: {}", crate::output::one_line(problem));
            }
            RunRow::Verified(figures) => {
                let sealed = figures.position.map_or_else(|| "-".to_owned(), |p| format!("#{p}"));
                outln!(
                    "{:<30} {:<12} {:>7} {:>7} {:>8}",
                    figures.run,
                    figures.outcome.unwrap_or("running"),
                    figures.records,
                    sealed,
                    super::cost::figure(figures.tokens)
                );
            }
        }
    }
}

/// `agentplane runs [--outcome OUTCOME] [--limit N [--before CURSOR]] [--ids | --json] [--skip-signatures | --require-signature]`.
pub fn runs(
    settings: &Settings,
    outcome: Option<Outcome>,
    page: Option<Page<'_>>,
    ids: bool,
    signatures: SignatureRead,
    json: bool,
) -> Result<(), Failure> {
    let reader = Reader::open(settings)?.signatures(signatures);
    // Strict on demand (R-SIG-3): the ids are then those of the runs a
    // trusted key vouches for, read as every other listing reads them.
    let strict = signatures == SignatureRead::Require;
    let listed = match page {
        Some(page) => Some(page.read(reader.store.as_ref(), &reader.tenant, outcome)?),
        None if outcome.is_some() || (ids && !strict) => {
            Some(reader.store.runs(&reader.tenant, outcome)?.into_iter().map(|run| (run, None)).collect())
        }
        None => None,
    };
    // A page is read, each row held to its run's chain: the admission order
    // is derived data, and its instants put a run on a page.
    if let (true, None, false, false, Some(listed)) = (ids, outcome, strict, page.is_some(), &listed) {
        for (run, _) in listed {
            outln!("{run}");
        }
        return Ok(());
    }
    let vouched = |verified: &VerifiedRun| unvouched(&reader, verified, TimeWindow::ALL);
    let rows = match listed {
        Some(listed) => rows_of(listed, outcome, &|run| reader.read(run), &vouched)?,
        None => every_run(&reader, &vouched)?,
    };
    let total = rows
        .iter()
        .filter_map(|row| match row {
            RunRow::Verified(figures) => {
                Some(Unvouched { unsigned: figures.unsigned.unwrap_or(0), untrusted: figures.untrusted.unwrap_or(0) })
            }
            RunRow::Unverified(_) => None,
        })
        .fold(Unvouched::default(), Unvouched::plus);
    if reader.verifier.is_some()
        && let Some(said) = unvouched_said(total, "of the records of the runs read", &strictly("runs"))
    {
        // On stderr: stdout stays the listing (or ids, or JSON) alone.
        errln!("{said}");
    }
    let answer = unverified(settings, &rows, signatures);
    if ids {
        // Listed by outcome, an id is a claim about the run's answer (and
        // read strictly, about its signatures): only the runs whose verified
        // chain holds to it are printed, the others said on stderr (stdout
        // stays ids alone, for scripts).
        for row in &rows {
            match row {
                RunRow::Verified(figures) => outln!("{}", figures.run),
                RunRow::Unverified(Problem { problem, run, .. }) => {
                    errln!("{run} UNVERIFIED: {}", crate::output::one_line(problem));
                }
            }
        }
        return answer;
    }
    if json {
        print_json(&rows)?;
    } else {
        print_table(&rows);
    }
    answer
}

/// `--limit N [--before CURSOR]`: a page of the admission order.
#[derive(Clone, Copy)]
pub struct Page<'a> {
    /// The most runs listed.
    pub limit: u32,
    /// The cursor the page starts below.
    pub before: Option<&'a str>,
    /// The plane and tenant the page is of, for the next page's command.
    pub settings: &'a Settings,
    /// The flags of this listing the next page's command repeats (` --ids`,
    /// ` --json`, ` --skip-signatures`, ` --require-signature`).
    pub flags: &'a str,
}

impl Page<'_> {
    /// The page's runs, newest first; when more follow, says on stderr how to
    /// ask for them (stdout stays the listing alone, for scripts).
    fn read(
        self,
        store: &dyn journal_core::Store,
        tenant: &journal_core::TenantId,
        outcome: Option<Outcome>,
    ) -> Result<Vec<(RunId, Option<At>)>, Failure> {
        let before = self
            .before
            .map(|text| {
                AdmittedRun::from_cursor(text).ok_or_else(|| {
                    Failure::Usage(format!(
                        "--before {}: not a cursor (MILLIS:RUN, as `runs --limit` prints for the next page)",
                        crate::output::shown(text)
                    ))
                })
            })
            .transpose()?;
        let limit = self.limit as usize;
        let mut admitted = store.admissions(tenant, before.as_ref(), outcome, limit + 1)?;
        if admitted.len() > limit {
            admitted.truncate(limit);
            if let Some(last) = admitted.last() {
                let outcome = outcome.map_or_else(String::new, |o| format!(" --outcome {}", o.as_str()));
                // Run as printed, it pages this plane (the plane flags
                // given), this tenant (not the configuration's first) and
                // prints the page as this one did (`--ids`, `--json`, the
                // signatures read alike).
                errln!(
                    "next page: {} --limit {limit}{outcome}{} --before {}",
                    self.settings.command_for_tenant("runs"),
                    self.flags,
                    last.cursor()
                );
            }
        }
        Ok(admitted.into_iter().map(|row| (row.run, Some(row.at))).collect())
    }
}

/// A row for every run of the tenant, read in one snapshot: every run whose
/// records are stored, so a run the runs table no longer lists is shown
/// UNVERIFIED (as `cost` refuses it), never left out (R-AUD-8).
fn every_run(reader: &Reader, vouched: Vouched<'_>) -> Result<Vec<RunRow>, Failure> {
    let mut rows = Vec::new();
    let mut stopped = None;
    let read = reader.each_run(&mut |run, verified| match row_of(run, verified.map_err(Failure::from), vouched) {
        Ok(row) => {
            rows.push(row);
            Ok(())
        }
        Err(failure) => {
            let err = journal_core::JournalError::Io(journal_core::StorageError::message(failure.message()));
            stopped = Some(failure);
            Err(err)
        }
    });
    if let Some(failure) = stopped {
        return Err(failure);
    }
    read?;
    Ok(rows)
}

/// Exit 1 when a row is unverified (3 when every one is build skew: this
/// binary cannot read them, the history may be intact).
fn unverified(settings: &Settings, rows: &[RunRow], signatures: SignatureRead) -> Result<(), Failure> {
    let classes: Vec<Class> = rows
        .iter()
        .filter_map(|row| match row {
            RunRow::Unverified(problem) => Some(problem.class),
            RunRow::Verified(_) => None,
        })
        .collect();
    if classes.is_empty() {
        return Ok(());
    }
    let message = format!("{} of {} runs did not verify (marked UNVERIFIED)", classes.len(), rows.len());
    if classes.iter().all(|class| *class == Class::BuildSkew) {
        Err(Failure::BuildSkew(format!("{message}: this binary cannot read them; the remedy names the build that can")))
    } else {
        // Read strictly, the findings include records no trusted key
        // vouches for, which only the strict audit counts as findings.
        let verify = settings.command(if signatures == SignatureRead::Require {
            "verify --require-signature"
        } else {
            "verify"
        });
        Err(Failure::Findings(format!("{message}: run `{verify}` for the findings")))
    }
}
