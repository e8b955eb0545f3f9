//! One run-state fold: the state a live run decides from is, after every
//! call, the fold of the journal it wrote ([`RunState::apply`] over its
//! verified records); the fold's answer is [`last_conclusion`]'s on every
//! prefix; and a verified run's admission, idempotency key, plan and fork
//! are read by their typed accessors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::journal::{admission, forked_from, last_conclusion_at, plan_at};
use journal_core::runtime::RuntimeError;
use journal_core::{
    Admission, AdmitRequest, Budget, ChainCheck, Counters, Dimension, DoubtAnswer, EffectOutput, EffectResult, Journal,
    MemoryStore, Origin, Outcome, RunHandle, RunId, RunState, RunStatus, Runtime, RuntimeBuilder, TenantId, Upcasters,
    VerifiedRun, VerifyOptions, last_conclusion,
};

const ORIGIN: &str = "run-state.test/plane";

struct Plane {
    store: Arc<MemoryStore>,
    tenant: TenantId,
    origin: Origin,
    runtime: Runtime,
}

impl Plane {
    fn new() -> Self {
        let store = Arc::new(MemoryStore::new());
        let tenant = TenantId::new("t").unwrap();
        let origin = Origin::new(ORIGIN).unwrap();
        let runtime = RuntimeBuilder::new(store.clone()).tenant(tenant.clone(), origin.clone(), None).build().unwrap();
        Self { store, tenant, origin, runtime }
    }

    fn read(&self, run: &RunId) -> VerifiedRun {
        let upcasters = Upcasters::builtin();
        let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
        Journal::new(self.store.as_ref(), &self.tenant, &self.origin).read(run, check).unwrap()
    }

    fn admit(&self, key: &str, budget: Budget) -> RunHandle<'_> {
        let request = AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget };
        match self.runtime.admit(&self.tenant, request).unwrap() {
            Admission::New(handle) => *handle,
            Admission::Existing { run, .. } => panic!("{key} exists as {run}"),
        }
    }

    /// The live handle's state is the fold of what its journal holds.
    fn holds(&self, handle: &RunHandle<'_>, after: &str) {
        let folded = RunState::of(&self.read(handle.run()).records);
        assert_eq!(handle.state(), &folded, "after {after}");
    }
}

fn charged(output: &str, tokens: u64) -> EffectOutput {
    EffectOutput {
        result: EffectResult::Ok { output: output.into() },
        charged: Counters { tokens, ..Counters::default() },
    }
}

#[test]
fn a_live_run_decides_from_the_fold_of_its_journal_after_every_call() {
    let plane = Plane::new();
    let budget = Budget { tokens: Some(100), ..Budget::default() };
    let mut run = plane.admit("live", budget);
    let id = run.run().clone();
    plane.holds(&run, "admission");
    run.start_step("work").unwrap();
    plane.holds(&run, "a step");
    run.effect("ek:a", "work", || charged("a", 60)).unwrap();
    plane.holds(&run, "an effect");
    run.effect("ek:a", "work", || unreachable!("done effects are read back")).unwrap();
    plane.holds(&run, "an effect read back");
    let stopped = run.effect("ek:b", "work", || charged("b", 70));
    assert!(matches!(stopped, Err(RuntimeError::Stopped { status: RunStatus::Exhausted { .. }, .. })));
    plane.holds(&run, "an exhaustion");
    assert_eq!(run.state().status(), plane.runtime.status(&plane.tenant, &id).unwrap());
    assert!(!run.state().may_continue());

    plane.runtime.raise_ceiling(&plane.tenant, &id, Dimension::Tokens, Some(500)).unwrap();
    let mut resumed = plane.runtime.resume(&plane.tenant, &id).unwrap();
    plane.holds(&resumed, "a resume");
    assert!(resumed.state().may_continue());
    assert_eq!(resumed.state().counters(), plane.runtime.cost(&plane.tenant, &id).unwrap());
    resumed
        .effect("ek:c", "work", || EffectOutput {
            result: EffectResult::Err { error: "down".into() },
            charged: Counters::default(),
        })
        .unwrap_err();
    plane.holds(&resumed, "a failed effect");
    assert_eq!(resumed.state().counters().tokens, 130);
    assert_eq!(resumed.state().counters().effects, 3);
}

#[test]
fn a_doubt_and_its_answer_are_the_same_state_live_and_read_back() {
    let plane = Plane::new();
    let mut admitted = None;
    let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut run = plane.admit("doubt", Budget::default());
        admitted = Some(run.run().clone());
        // The process dies while the payment is in flight.
        run.effect("ek:pay", "work", || panic!("power cut"))
    }));
    assert!(crashed.is_err());
    let id = admitted.unwrap();
    let state = RunState::of(&plane.read(&id).records);
    assert_eq!(state.in_doubt(), ["ek:pay".to_owned()]);
    assert!(
        matches!(
            plane.runtime.resume(&plane.tenant, &id),
            Err(RuntimeError::Stopped { status: journal_core::RunStatus::Quarantined { .. }, .. })
        ),
        "a doubt stops the resume: the run is quarantined"
    );
    let quarantined = RunState::of(&plane.read(&id).records);
    assert_eq!(quarantined.standing().map(|c| c.outcome), Some(Outcome::Quarantined));
    assert!(!quarantined.may_continue());

    let answer = DoubtAnswer::Happened { result: EffectResult::Ok { output: "receipt".into() } };
    plane.runtime.answer_doubt(&plane.tenant, &id, "ek:pay", answer).unwrap();
    let answered = RunState::of(&plane.read(&id).records);
    assert_eq!(answered.standing(), None, "an answer continues after the conclusion");
    assert_eq!(answered.last_conclusion().map(|c| c.outcome), Some(Outcome::Quarantined));
    assert_eq!(answered.done("ek:pay"), Some(&EffectResult::Ok { output: "receipt".into() }));
    assert!(answered.in_doubt().is_empty());
    assert!(answered.may_continue());
    let resumed = plane.runtime.resume(&plane.tenant, &id).unwrap();
    plane.holds(&resumed, "an answered doubt");
}

/// R-RUN-5 (review 43): a live worker's end recorded after a quarantine
/// that named another doubt, or after a person's answer that the effect did
/// not happen (under a hold, or after a resume beside it), leaves the
/// handle's state the fold of what its journal holds, and the fold says
/// the effect is done, with its result and its charge counted once.
#[test]
fn r_run_5_an_end_after_a_quarantine_or_an_answer_is_the_same_state_live_and_read_back() {
    for case in ["two doubts", "held and answered", "beside and answered"] {
        let plane = Plane::new();
        let mut run = plane.admit(case, Budget::default());
        let id = run.run().clone();
        if case == "two doubts" {
            let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run.effect("ek:a", "work", || panic!("the closure of ek:a panicked"))
            }));
            assert!(died.is_err());
        }
        let answer = run.effect("ek:pay", "work", || {
            let (t, runtime) = (&plane.tenant, &plane.runtime);
            match case {
                "held and answered" => runtime.withhold(t, &id, "a hold").unwrap(),
                _ => assert!(runtime.resume(t, &id).is_err(), "{case}: quarantined"),
            }
            if case != "two doubts" {
                runtime.answer_doubt(t, &id, "ek:pay", DoubtAnswer::DidNotHappen).unwrap();
            }
            charged("paid", 7)
        });
        assert!(matches!(answer, Err(RuntimeError::Stopped { .. })), "{case}: {answer:?}");
        plane.holds(&run, case);
        let state = RunState::of(&plane.read(&id).records);
        assert_eq!(state.done("ek:pay"), Some(&EffectResult::Ok { output: "paid".into() }), "{case}");
        assert!(!state.is_in_doubt("ek:pay"), "{case}");
        assert_eq!(state.counters().tokens, 7, "{case}");
    }
}

#[test]
fn the_fold_answers_what_last_conclusion_reads_on_every_prefix() {
    let plane = Plane::new();
    let mut run = plane.admit("prefixes", Budget { steps: Some(1), ..Budget::default() });
    let id = run.run().clone();
    run.start_step("work").unwrap();
    run.start_step("again").unwrap_err(); // the steps ceiling concludes exhausted
    plane.runtime.withhold(&plane.tenant, &id, "hold").unwrap();
    plane.runtime.lift(&plane.tenant, &id, "go").unwrap();
    plane.runtime.raise_ceiling(&plane.tenant, &id, Dimension::Steps, None).unwrap();
    let mut resumed = plane.runtime.resume(&plane.tenant, &id).unwrap();
    resumed.start_step("again").unwrap();
    resumed.succeed("done").unwrap();
    let records = plane.read(&id).records;
    let mut conclusions = 0;
    for end in 0..=records.len() {
        let prefix = &records[..end];
        let state = RunState::of(prefix);
        assert_eq!(state.last_conclusion(), last_conclusion(prefix), "prefix of {end}");
        let at = last_conclusion_at(prefix);
        assert_eq!(at.map(|(_, c)| c), last_conclusion(prefix));
        if let Some((seq, _)) = at {
            assert!(matches!(
                prefix[usize::try_from(seq).unwrap() - 1].record.body,
                journal_core::RecordBody::RunConcluded(_)
            ));
            conclusions += 1;
        }
    }
    assert!(conclusions > 0);
    assert_eq!(RunState::of(&records).status(), RunStatus::Succeeded);
}

#[test]
fn a_verified_run_names_its_admission_plan_and_fork() {
    let plane = Plane::new();
    let mut source = plane.admit("source", Budget::default());
    let source_id = source.run().clone();
    source.start_step("work").unwrap();
    source.effect("ek:a", "work", || charged("a", 1)).unwrap();
    source.succeed("done").unwrap();
    let verified = plane.read(&source_id);
    assert_eq!(verified.idempotency_key(), Some("source"));
    assert_eq!(verified.admission().map(|a| a.tenant.as_str()), Some("t"));
    assert_eq!(verified.plan(), Some(["work".to_owned()].as_slice()));
    assert_eq!(verified.forked_from(), None);
    assert_eq!(plan_at(&verified.records).map(|(seq, _)| seq), Some(2));
    assert_eq!(verified.records[0].record.idempotency_key(), Some("source"));
    assert!(verified.records.iter().skip(1).all(|r| r.record.idempotency_key().is_none()));

    let request = AdmitRequest { idempotency_key: "fork".into(), plan: vec!["work".into()], budget: Budget::default() };
    let Admission::New(fork) = plane.runtime.fork(&plane.tenant, &source_id, 6, request).unwrap() else {
        panic!("a new fork")
    };
    assert_eq!(fork.state().done("ek:a"), Some(&EffectResult::Ok { output: "a".into() }), "served from the source");
    let forked = plane.read(fork.run());
    let from = forked.forked_from().expect("the provenance");
    assert_eq!((from.source_run.as_str(), from.at_seq), (source_id.as_str(), 6));
    assert_eq!(from.source_hash, verified.records[5].stored.hash.to_string());
    assert_eq!(forked_from(&forked.records), Some(from));
    assert_eq!(admission(&forked.records).map(|a| a.idempotency_key.as_str()), Some("fork"));
    assert_eq!(forked.idempotency_key(), Some("fork"));
}

/// R-OPS-1 (review 39): anyone who can write the store can put in a run
/// whose chain links (unsigned records pass a lenient read) and whose
/// effects are all started before any ends. Each end was matched by a scan
/// of every effect still open (`Vec::retain`), so the fold of such a run,
/// which `show`, `cost`, `resume`, a redelivered admission and the console's
/// run page all make, took time in the square of its length: 200,000
/// starts and their ends took over a minute; keyed by start order and by
/// key, about a second (measured once by review 39: no test asserts a
/// time). This holds the keyed fold to the answers of such a run.
#[test]
fn r_ops_1_a_run_of_many_effects_open_at_once_folds_to_the_right_answers() {
    use journal_core::record::{Build, EffectDone, EffectStarted};
    use journal_core::{At, Record, RecordBody};
    const EFFECTS: usize = 20_000;
    let run = RunId::new("run-open-effects").unwrap();
    let at = At::from_unix_millis(1_767_225_600_000).unwrap();
    let record = |seq: usize, key: usize, body: RecordBody| Record {
        run: run.clone(),
        seq: seq as u64,
        at,
        effect_key: Some(format!("ek:{key}")),
        build: Build::current(),
        body,
    };
    let started = || RecordBody::EffectStarted(EffectStarted { step: "work".into(), reserved: Counters::default() });
    let done = |key: usize| {
        RecordBody::EffectDone(EffectDone {
            result: EffectResult::Ok { output: format!("{key}") },
            charged: Counters::default(),
        })
    };
    let mut records: Vec<Record> = (0..EFFECTS).map(|key| record(key + 1, key, started())).collect();
    // Every end but the last effect's, in reverse order, so one stays in doubt.
    records.extend((0..EFFECTS - 1).rev().enumerate().map(|(n, key)| record(EFFECTS + n + 1, key, done(key))));
    let state = RunState::fold(&records);
    assert_eq!(state.in_doubt(), [format!("ek:{}", EFFECTS - 1)]);
    assert!(state.is_in_doubt(&format!("ek:{}", EFFECTS - 1)) && !state.is_in_doubt("ek:7"));
    assert_eq!(state.counters().effects, EFFECTS as u64 - 1);
    assert_eq!(state.done("ek:7").cloned(), Some(EffectResult::Ok { output: "7".into() }));
}

/// R-RUN-5, R-OPS-1 (review 41): the keyed fold of open effects answers as
/// the fold it replaced (a `Vec` of keys pushed at each start and retained
/// at each end or answer, copied here) for any order of records: the same
/// key started twice, an end with no start, a doubt answered then started
/// again, a record with no effect key. And an open effect is found in
/// doubt exactly when its last open start came before the last quarantine.
mod fold_against_the_vec_it_replaced {
    use journal_core::record::{Build, DoubtAnswered, EffectDone, EffectStarted, RunConcluded, WithholdingLifted};
    use journal_core::{
        At, Counters, DoubtAnswer, EffectResult, Outcome, Record, RecordBody, RunId, RunState, Verdict,
    };
    use proptest::prelude::*;

    const KEYS: [Option<&str>; 4] = [Some("ek:a"), Some("ek:b"), Some("ek:c"), None];

    fn body(kind: u8) -> RecordBody {
        match kind {
            0 | 1 => RecordBody::EffectStarted(EffectStarted { step: "work".into(), reserved: Counters::default() }),
            2 => RecordBody::EffectDone(EffectDone {
                result: EffectResult::Ok { output: "done".into() },
                charged: Counters::default(),
            }),
            3 => RecordBody::DoubtAnswered(DoubtAnswered { answer: DoubtAnswer::DidNotHappen }),
            4 => RecordBody::DoubtAnswered(DoubtAnswered {
                answer: DoubtAnswer::Happened { result: EffectResult::Ok { output: "happened".into() } },
            }),
            5 => RecordBody::RunConcluded(RunConcluded {
                outcome: Outcome::Quarantined,
                verdict: Verdict::None,
                reason: "doubt".into(),
            }),
            6 => RecordBody::RunConcluded(RunConcluded {
                outcome: Outcome::Withheld,
                verdict: Verdict::None,
                reason: "hold".into(),
            }),
            _ => RecordBody::WithholdingLifted(WithholdingLifted { note: "lifted".into() }),
        }
    }

    proptest! {
        #[test]
        fn r_run_5_the_keyed_fold_answers_as_the_vec_fold(ops in proptest::collection::vec((0u8..8, 0usize..4), 0..60)) {
            let run = RunId::new("run-props").unwrap();
            let at = At::from_unix_millis(1_767_225_600_000).unwrap();
            let records: Vec<Record> = ops
                .iter()
                .enumerate()
                .map(|(seq, (kind, key))| Record {
                    run: run.clone(),
                    seq: seq as u64 + 1,
                    at,
                    effect_key: KEYS[*key].map(str::to_owned),
                    build: Build::current(),
                    body: body(*kind),
                })
                .collect();
            let mut state = RunState::default();
            // The fold it replaced, and (start index) the last quarantine.
            let mut open: Vec<(String, usize)> = Vec::new();
            let mut quarantined_at = None;
            for (index, record) in records.iter().enumerate() {
                state.apply(record);
                match (&record.body, &record.effect_key) {
                    (RecordBody::EffectStarted(_), Some(key)) => open.push((key.clone(), index)),
                    (RecordBody::EffectDone(_) | RecordBody::DoubtAnswered(_), Some(key)) => {
                        open.retain(|(open, _)| open != key)
                    }
                    (RecordBody::RunConcluded(c), _) if c.outcome == Outcome::Quarantined => quarantined_at = Some(index),
                    _ => {}
                }
                let keys: Vec<&str> = open.iter().map(|(key, _)| key.as_str()).collect();
                prop_assert_eq!(state.in_doubt(), keys, "after record {}", index);
                for key in KEYS.iter().flatten() {
                    let starts: Vec<usize> = open.iter().filter(|(open, _)| open == key).map(|(_, at)| *at).collect();
                    prop_assert_eq!(state.is_in_doubt(key), !starts.is_empty());
                    let found = starts.last().is_some_and(|last| quarantined_at.is_some_and(|q| *last < q));
                    prop_assert_eq!(state.is_found_in_doubt(key), found, "{} after record {}", key, index);
                }
            }
            prop_assert_eq!(&state, &RunState::fold(&records));
        }
    }
}
