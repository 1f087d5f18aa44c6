//! The protocol's messages (drivers/PROTOCOL.md, as drivers/wire.py encodes them): replies, payloads,
//! the message an ack names, and the spec's client settings a `reset` carries.

use serde_json::{json, Value};

pub const PROTOCOL: u64 = 1;

/// The ops this driver performs: all of the protocol's but redeliver_unacknowledged_messages, which
/// the crate does not offer (its consumer engine asks for redelivery only on its own ack timeout).
pub const OPS: &[&str] = &[
    "send",
    "subscribe",
    "receive",
    "acknowledge",
    "acknowledge_cumulative",
    "negative_acknowledge",
    "close",
    "seek",
    "tick",
];
/// The capabilities the crate has (drivers/PROTOCOL.md): an ack timeout
/// (`with_unacked_message_resend_delay`), a dead-letter policy, seek by message id, a consumer of
/// several topics by their names (`with_topics`) or by a pattern (`with_topic_regex`). Left out:
/// `partitioned` (the crate's partitioned producer picks a partition it does not tell), ack
/// receipts, nack backoff, the ack grouping time, batch-index ack (an ack carries no ack set),
/// receiver queue 0 (the crate turns 0 into 1000), `redelivery_count` (the crate does not show it) and
/// `tls_client_cert` (no client certificate: auth.rs).
pub const CAPABILITIES: &[&str] = &[
    "ack_timeout",
    "dead_letter_policy",
    "seek_by_id",
    "multi_topics",
    "topics_pattern",
];

pub fn ok() -> Value {
    json!({"outcome": "ok"})
}

/// A `fail` (refused, it did not happen) or `info` (unknown whether it happened) reply.
pub fn failed(outcome: &str, class: &str, message: &str) -> Value {
    json!({"outcome": outcome, "error": {"class": class, "message": message}})
}

/// The driver could not perform the request at all (not understood, not supported, a driver bug).
pub fn error(class: &str, message: &str) -> Value {
    json!({"outcome": "error", "error": {"class": class, "message": message}})
}

/// A receive that got a message. The crate does not give the application the broker's redelivery
/// count (CommandMessage.redelivery_count stays inside its consumer engine), so it is null: unknown.
pub fn delivered(entry: i64, index: i64, key: Option<String>) -> Value {
    json!({"outcome": "ok", "delivered_entry": entry, "delivered_index": index, "redelivery_count": null,
           "key": key})
}

/// What a send publishes for message (entry, index): "3", or "3.1" in a batch.
pub fn payload(entry: i64, index: Option<usize>) -> Vec<u8> {
    match index {
        None => entry.to_string().into_bytes(),
        Some(i) => format!("{entry}.{i}").into_bytes(),
    }
}

/// The (entry, index) a payload names; index -1 when it was not sent in a batch.
pub fn payload_id(data: &[u8]) -> Option<(i64, i64)> {
    let text = std::str::from_utf8(data).ok()?;
    match text.split_once('.') {
        Some((entry, index)) => Some((entry.parse().ok()?, index.parse().ok()?)),
        None => Some((text.parse().ok()?, -1)),
    }
}

/// The message an acknowledge, negative_acknowledge or seek request names.
pub fn message_of(request: &Value) -> Result<(i64, i64), String> {
    let entry = request.get("entry").and_then(Value::as_i64);
    let index = request.get("index").map_or(Some(-1), Value::as_i64);
    match (entry, index) {
        (Some(entry), Some(index)) => Ok((entry, index)),
        _ => Err(format!(
            "{} needs an entry (and an index, -1 when not batched)",
            op_name(request)
        )),
    }
}

pub fn op_name(request: &Value) -> &str {
    request.get("op").and_then(Value::as_str).unwrap_or("")
}

/// The client settings of a reset's spec (model/spec.py); a field left out takes the suite's default.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub subscription_type: String,
    pub earliest: bool,
    pub receiver_queue_size: u32,
    pub ack_timeout_ms: Option<u64>,
    pub max_redeliver_count: Option<usize>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            subscription_type: "Shared".into(),
            earliest: true,
            receiver_queue_size: 1000,
            ack_timeout_ms: None,
            max_redeliver_count: None,
        }
    }
}

impl Settings {
    pub fn of_spec(spec: &Value) -> Result<Settings, String> {
        let default = Settings::default();
        let subscription_type = match spec.get("subscription_type").and_then(Value::as_str) {
            None => default.subscription_type,
            Some(kind @ ("Exclusive" | "Failover" | "Shared" | "Key_Shared")) => kind.to_string(),
            Some(other) => return Err(format!("unknown subscription_type {other:?}")),
        };
        let earliest = match spec.get("initial_position").and_then(Value::as_str) {
            None | Some("Earliest") => true,
            Some("Latest") => false,
            Some(other) => return Err(format!("unknown initial_position {other:?}")),
        };
        Ok(Settings {
            subscription_type,
            earliest,
            receiver_queue_size: spec
                .get("receiver_queue_size")
                .and_then(Value::as_u64)
                .map_or(default.receiver_queue_size, |n| n as u32),
            ack_timeout_ms: spec.get("ack_timeout_ms").and_then(Value::as_u64),
            max_redeliver_count: spec
                .get("max_redeliver_count")
                .and_then(Value::as_u64)
                .map(|n| n as usize),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_name_their_message() {
        assert_eq!(payload(3, None), b"3");
        assert_eq!(payload(3, Some(1)), b"3.1");
        assert_eq!(payload_id(b"3"), Some((3, -1)));
        assert_eq!(payload_id(b"3.1"), Some((3, 1)));
        assert_eq!(payload_id(b"x"), None);
    }

    #[test]
    fn a_spec_gives_the_client_settings() {
        let spec = json!({"subscription_type": "Exclusive", "initial_position": "Latest", "receiver_queue_size": 3,
                          "ack_timeout_ms": null, "max_redeliver_count": 2});
        let settings = Settings::of_spec(&spec).unwrap();
        assert_eq!(
            (settings.subscription_type.as_str(), settings.earliest),
            ("Exclusive", false)
        );
        assert_eq!(
            (
                settings.receiver_queue_size,
                settings.ack_timeout_ms,
                settings.max_redeliver_count
            ),
            (3, None, Some(2))
        );
        assert!(Settings::of_spec(&json!({"subscription_type": "Broadcast"})).is_err());
        assert_eq!(Settings::of_spec(&json!({})).unwrap(), Settings::default());
    }
}
