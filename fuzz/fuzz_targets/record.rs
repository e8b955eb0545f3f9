//! The record read path: header, hash before parse, version, strict shape.
#![no_main]
use journal_core::{ChainCheck, ChainHash, Record, RunId, StoredRecord, Upcasters, VerifyOptions, verify_run};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let upcasters = Upcasters::builtin();
    let _ = Record::header(data);
    let _ = Record::decode_verified(data, &upcasters);
    let row = StoredRecord {
        seq: 1,
        kind: "StepStarted".into(),
        effect_key: None,
        prev_hash: ChainHash::GENESIS,
        hash: ChainHash::link(&ChainHash::GENESIS, data),
        bytes: data.to_vec(),
        signature: None,
    };
    let run = RunId::new("fuzz-run").expect("a valid run id");
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let _ = verify_run(&run, &[row], None, check);
});
