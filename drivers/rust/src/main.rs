//! The Rust client (crate `pulsar`, tokio runtime) behind the conformance kit's driver protocol,
//! version 1 (drivers/PROTOCOL.md): one JSON request per line on stdin, one reply per line on
//! stdout, in order; logs go to stderr only.
//!
//! It performs the ops as the Python driver does (drivers/python/driver.py): payloads "<entry>" or
//! "<entry>.<index>" in a batch, a send replies its entry's position, a receive parses the payload
//! back. Client errors are replies: `fail` when the broker refused the op (ConsumerBusy), `info`
//! when its effect is unknown. What the crate does not do is left out of `hello` (no batch-index
//! ack, no receiver queue 0, no public redeliver_unacknowledged, no nack delay or backoff, no ack
//! grouping, no ack receipts), and what the application cannot see is sent as null: the crate does
//! not show a message's redelivery count, so `redelivery_count` is always null. Neither a reply nor
//! a log line shows the hello's token (secrets.rs).

mod auth;
mod client;
mod protocol;
mod secrets;

use std::io::Write;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use client::RustDriver;
use protocol::{error, ok};

/// Time kept back from a request's deadline to reply `info` before the suite gives up on the driver.
const DEADLINE_MARGIN_MS: u64 = 2_000;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    auth::LogWatch::install(
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn,pulsar::retry_op=error"))
            .target(env_logger::Target::Pipe(Box::new(secrets::RedactingStderr::new())))
            .build(),
    );
    let mut driver = RustDriver::new();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let stdout = std::io::stdout();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let (reply, closing) = match serde_json::from_str::<Value>(&line) {
            Ok(request @ Value::Object(_)) => (
                handle(&mut driver, &request).await,
                request.get("type").and_then(Value::as_str) == Some("close"),
            ),
            Ok(_) => (bad_request(&format!("not a JSON object: {line:.200}")), false),
            Err(e) => (bad_request(&format!("{e}: {line:.200}")), false),
        };
        let mut out = stdout.lock();
        let _ = writeln!(out, "{}", secrets::redact(&reply.to_string()));
        let _ = out.flush();
        if closing {
            return;
        }
    }
    driver.close().await;
}

fn bad_request(message: &str) -> Value {
    let mut reply = error("BadRequest", message);
    reply["id"] = Value::Null;
    reply
}

/// The reply to one request, its `id` echoed; an op that outlives its deadline is `info`.
async fn handle(driver: &mut RustDriver, request: &Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let deadline_ms = request.get("deadline_ms").and_then(Value::as_u64).unwrap_or(45_000);
    let budget = Duration::from_millis(deadline_ms.saturating_sub(DEADLINE_MARGIN_MS).max(100));
    let reply = match request.get("type").and_then(Value::as_str) {
        Some("hello") if request.get("protocol").and_then(Value::as_u64) != Some(protocol::PROTOCOL) => error(
            "ProtocolVersion",
            &format!(
                "this driver speaks protocol {}, asked for {}",
                protocol::PROTOCOL,
                request.get("protocol").unwrap_or(&Value::Null)
            ),
        ),
        Some("hello") => match tokio::time::timeout(budget, driver.hello(request)).await {
            Ok(reply) => reply,
            Err(_) => error("Timeout", "the client could not be created within the deadline"),
        },
        Some("reset") => driver.reset(request).await,
        Some("op") => match tokio::time::timeout(budget, driver.perform(request)).await {
            Ok(reply) => reply,
            Err(_) => protocol::failed(
                "info",
                "Timeout",
                "the client did not complete the op within its deadline",
            ),
        },
        Some("close") => {
            driver.close().await;
            ok()
        }
        other => error(
            "UnknownRequest",
            &format!(
                "unknown request type {} (hello, reset, op, close)",
                other.unwrap_or("null")
            ),
        ),
    };
    let mut reply = reply;
    reply["id"] = id;
    reply
}
