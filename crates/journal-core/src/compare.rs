//! Two runs compared record by record: what `agentplane diff` and the
//! console's diff page both show, from this one definition, so the two
//! never disagree on where two runs part.
//!
//! Records are compared by what they did (kind, effect key, body), never by
//! where or when (seq, instant), and without the fields that only name the
//! run ([`IDENTITY_FIELDS`]): two runs of one job under two idempotency keys
//! did the same.

use serde_json::Value;

use crate::chain::VerifiedRecord;

/// The body fields that name a run rather than say what it did (its
/// admission's idempotency key and tenant): shown, never compared.
pub const IDENTITY_FIELDS: &[&str] = &["idempotency_key", "tenant"];

/// What one record did, as two runs are compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordAction {
    /// The record's kind.
    pub kind: String,
    /// Its effect key, if it has one.
    pub effect_key: Option<String>,
    /// Its body without [`IDENTITY_FIELDS`].
    pub behaviour: Value,
}

impl RecordAction {
    /// What `record` did.
    pub fn of(record: &VerifiedRecord) -> Self {
        Self {
            kind: record.stored.kind.clone(),
            effect_key: record.stored.effect_key.clone(),
            behaviour: behaviour(&wire_body(record)),
        }
    }
}

/// A record's body as its wire bytes hold it (`null` when they hold none):
/// what was written, before any upcast.
pub fn wire_body(record: &VerifiedRecord) -> Value {
    serde_json::from_slice::<Value>(&record.stored.bytes)
        .ok()
        .and_then(|v| v.get("body").cloned())
        .unwrap_or(Value::Null)
}

/// A body without the fields that only name the run.
pub fn behaviour(body: &Value) -> Value {
    match body {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(name, _)| !IDENTITY_FIELDS.contains(&name.as_str()))
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether the records at one position of two runs did the same (both
/// absent counts as the same).
pub fn same_at(a: Option<&VerifiedRecord>, b: Option<&VerifiedRecord>) -> bool {
    a.map(RecordAction::of) == b.map(RecordAction::of)
}

/// The first position (from 0) at which the runs `a` and `b` did not do the
/// same, looking at no more than `limit` positions.
pub fn first_difference(a: &[VerifiedRecord], b: &[VerifiedRecord], limit: usize) -> Option<usize> {
    (0..a.len().max(b.len()).min(limit)).find(|&index| !same_at(a.get(index), b.get(index)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_fields_are_not_behaviour() {
        let admitted = serde_json::json!({"idempotency_key": "k1", "tenant": "t", "plan": ["a"]});
        let other_key = serde_json::json!({"idempotency_key": "k2", "tenant": "u", "plan": ["a"]});
        let other_plan = serde_json::json!({"idempotency_key": "k1", "tenant": "t", "plan": ["b"]});
        assert_eq!(behaviour(&admitted), behaviour(&other_key));
        assert_ne!(behaviour(&admitted), behaviour(&other_plan));
        assert_eq!(behaviour(&Value::Null), Value::Null);
    }
}
