//! Issue 20: the two kinds of log leaf, specified byte for byte in the crate
//! README ("The log's leaves") and pinned by `tests/vectors/leaves.txt`: the
//! bytes and RFC 6962 leaf hashes of a seal leaf, a heads entry and a heads
//! leaf over fixed inputs. The hashes are recomputed here with SHA-256
//! directly (`0x00 || bytes`), not through tlog, and the entries' root by
//! RFC 6962's own recursion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use journal_core::heads::{HeadEntry, HeadsLeaf};
use journal_core::{ChainHash, ExpectedHead, Origin, RunId, SealLeaf};
use sha2::{Digest, Sha256};

fn leaf_hash(bytes: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update([0u8]);
    hasher.update(bytes);
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// RFC 6962 section 2.1, MTH over leaf hashes, written out again.
fn mth(leaves: &[[u8; 32]]) -> [u8; 32] {
    match leaves.len() {
        0 => Sha256::digest([]).into(),
        1 => leaves[0],
        n => {
            let k = n.next_power_of_two() / 2;
            let mut hasher = Sha256::new();
            hasher.update([1u8]);
            hasher.update(mth(&leaves[..k]));
            hasher.update(mth(&leaves[k..]));
            hasher.finalize().into()
        }
    }
}

fn vectors() -> String {
    let origin = Origin::new("example.test/plane/shop").unwrap();
    let hash = |byte: u8| ChainHash::from_slice(&[byte; 32]).unwrap();
    let seal = SealLeaf::new(&origin, &RunId::new("run-0001").unwrap(), ExpectedHead { seq: 7, hash: hash(0xab) });
    let entries = vec![
        HeadEntry::new(&RunId::new("run-0002").unwrap(), ExpectedHead { seq: 3, hash: hash(0x01) }),
        HeadEntry::new(&RunId::new("run-0003").unwrap(), ExpectedHead { seq: 12, hash: hash(0x02) }),
        HeadEntry::new(&RunId::new("run-0004").unwrap(), ExpectedHead { seq: 1, hash: hash(0x03) }),
    ];
    let heads = HeadsLeaf::new(&origin, &entries);
    let raw: Vec<[u8; 32]> = entries
        .iter()
        .map(|e| {
            let mut hasher = Sha256::new();
            hasher.update([0u8]);
            hasher.update(e.to_bytes());
            hasher.finalize().into()
        })
        .collect();
    let root: String = mth(&raw).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(heads.entries.root.to_string(), root, "the entries' root is RFC 6962's");
    let mut out = String::new();
    let mut item = |name: &str, bytes: &[u8]| {
        out.push_str(&format!(
            "== {name}\n{}-- leaf hash {}\n",
            String::from_utf8(bytes.to_vec()).unwrap(),
            leaf_hash(bytes)
        ));
    };
    item("seal leaf", &seal.to_bytes());
    for (i, entry) in entries.iter().enumerate() {
        item(&format!("heads entry {i}"), &entry.to_bytes());
    }
    item("heads leaf", &heads.to_bytes());
    out
}

#[test]
fn r_log_5_seal_and_heads_leaves_are_the_specified_bytes() {
    let expected =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/leaves.txt")).unwrap_or_default();
    if std::env::var_os("AGENTPLANE_BLESS_LEAVES").is_some() && expected.is_empty() {
        let header = "# The log's leaves (journal-core README, \"The log's leaves\"): bytes, then the RFC 6962\n\
                      # leaf hash SHA-256(0x00 || bytes). Written once by tests/leaves.rs; never rewritten.\n\n";
        std::fs::write(
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/leaves.txt"),
            format!("{header}{}", vectors()),
        )
        .unwrap();
        return;
    }
    let body = expected.split_once("\n\n").map_or(expected.as_str(), |(_, body)| body);
    assert_eq!(vectors(), body, "the leaves drifted from the spec; bless only with a new leaf version");
}

#[test]
fn r_log_5_a_heads_leaf_can_never_read_as_a_seal_or_the_other_way() {
    let origin = Origin::new("example.test/plane/shop").unwrap();
    let seal = SealLeaf::new(
        &origin,
        &RunId::new("run-1").unwrap(),
        ExpectedHead { seq: 1, hash: ChainHash::from_slice(&[7; 32]).unwrap() },
    )
    .to_bytes();
    assert!(HeadsLeaf::parse(&seal).is_none() && !HeadsLeaf::is_tagged(&seal));
    let heads = HeadsLeaf::new(&origin, &[]).to_bytes();
    assert!(HeadsLeaf::parse(&heads).is_some());
    let some_seal = SealLeaf::new(
        &origin,
        &RunId::new("run-1").unwrap(),
        ExpectedHead { seq: 1, hash: ChainHash::from_slice(&[7; 32]).unwrap() },
    );
    assert!(!some_seal.matches(&heads));
    // One spelling: an extra space or a capital hex digit is not a heads leaf.
    let text = String::from_utf8(heads).unwrap();
    assert!(HeadsLeaf::parse(text.replace("runs 0", "runs  0").as_bytes()).is_none());
    assert!(HeadsLeaf::parse(text.to_uppercase().as_bytes()).is_none());
    // A run can never take the name heads leaves are kept under.
    assert!(matches!(
        RunId::new(journal_core::heads::HEADS_LEAF_RUN),
        Err(journal_core::JournalError::InvalidId { what: "run id", .. })
    ));
}
