#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]
//! Helpers shared by the integration tests (each test file includes it).
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;
use tlog::{LeafHash, MemoryHashStore, NodeHash};

pub fn hex_bytes(text: &str) -> Vec<u8> {
    assert!(text.len().is_multiple_of(2), "odd hex length in vector: {text}");
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap_or_else(|_| panic!("bad hex in vector: {text}")))
        .collect()
}

pub fn node(text: &str) -> NodeHash {
    NodeHash::from_hex(text).unwrap_or_else(|err| panic!("vector hash {text}: {err}"))
}

pub fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_else(|| panic!("vector field {key} is not a string: {value}"))
}

pub fn u64_of(value: &Value, key: &str) -> u64 {
    value[key].as_u64().unwrap_or_else(|| panic!("vector field {key} is not a number: {value}"))
}

pub fn list_of<'a>(value: &'a Value, key: &str) -> &'a Vec<Value> {
    value[key].as_array().unwrap_or_else(|| panic!("vector field {key} is not a list: {value}"))
}

pub fn hex_list(value: &Value, key: &str) -> Vec<Vec<u8>> {
    list_of(value, key).iter().map(|h| hex_bytes(h.as_str().unwrap_or_default())).collect()
}

pub fn node_list(value: &Value, key: &str) -> Vec<NodeHash> {
    list_of(value, key).iter().map(|h| node(h.as_str().unwrap_or_default())).collect()
}

pub fn read_json(path: &PathBuf) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|err| panic!("reading {}: {err}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("parsing {}: {err}", path.display()))
}

/// The published vectors the tests use, kept in the repository as test data
/// (`tests/vectors/published/`, one file per source naming its repository,
/// commit and licence): merged into one object, keyed as the files key them.
pub fn published_vectors() -> Value {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/published");
    let mut merged = serde_json::Map::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("reading {}: {err}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no published vectors in {}", dir.display());
    for file in files {
        let Value::Object(entries) = read_json(&file) else { panic!("{} is not an object", file.display()) };
        assert!(entries.contains_key("_source"), "{} names no source", file.display());
        merged.extend(entries.into_iter().filter(|(key, _)| key != "_source"));
    }
    Value::Object(merged)
}

/// A tree of `size` leaves, leaf `i` being the hash of `i` in big-endian bytes.
pub fn store_of(size: u64) -> MemoryHashStore {
    let mut store = MemoryHashStore::new();
    for i in 0..size {
        store.append(LeafHash::of(&i.to_be_bytes()));
    }
    store
}
