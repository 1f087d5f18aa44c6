//! One program at a time on the crate's client: `reset` closes the last program's consumers and
//! producers, each op is one call of the crate's API.
//!
//! Where the crate's API leaves a choice, the driver takes the one an application porting from the
//! Java client would: the spec's receiver queue size is both the consumer's queue
//! (`ConsumerOptions::receiver_queue_size`) and its flow permits (`with_batch_size`, which the crate
//! sends as the broker's permits); the dead-letter topic is the Java client's default name,
//! `<topic>-<subscription>-DLQ`. A consumer of several topics is the crate's multi-topic consumer
//! (`with_topics`, or `with_topic_regex` looked up in the topic's namespace); its acks, nacks and
//! seeks name the topic the message came from. Operations are retried every 100 ms for at most 3 s (the crate's
//! default retries forever every 5 s): a second Exclusive consumer is refused with ConsumerBusy
//! within that time instead of waiting without end, while a consumer still gets back in after a
//! topic unload.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use pulsar::consumer::{DeadLetterPolicy, InitialPosition};
use pulsar::error::{ConnectionError, ConsumerError, ProducerError};
use pulsar::proto::MessageIdData;
use pulsar::{
    Consumer, ConsumerOptions, Error, OperationRetryOptions, Producer, ProducerOptions, Pulsar, SubType, TokioExecutor,
};
use regex::Regex;
use serde_json::{json, Value};

use crate::auth::{self, Auth};
use crate::protocol::{self, delivered, error, failed, message_of, ok, op_name, payload, payload_id, Settings};

/// The crate's version, read from Cargo.lock by build.rs.
const CLIENT_VERSION: &str = env!("PULSAR_CRATE_VERSION");
const RETRY_DELAY: Duration = Duration::from_millis(100);
const MAX_RETRIES: u32 = 30;
const OPERATION_TIMEOUT: Duration = Duration::from_secs(30);
/// How long closing a consumer or producer may take before the driver lets it go.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);
const RECEIVE_TIMEOUT_MS: u64 = 100;
/// How long a hello with `auth` waits for its first connection before leaving it to the first op.
const AUTH_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

type Client = Pulsar<TokioExecutor>;

pub struct RustDriver {
    service_url: String,
    auth: Option<Auth>,
    client: Option<Client>,
    settings: Settings,
    topic: String,
    /// A consumer of several topics: theirs (the reset's), else none.
    topics: Vec<String>,
    /// And the pattern that matches them alone, to subscribe by.
    topics_pattern: Option<String>,
    subscription: String,
    /// A producer per topic sent to, and whether it batches.
    producers: HashMap<(String, bool), Producer<TokioExecutor>>,
    consumers: HashMap<String, Consumer<Vec<u8>, TokioExecutor>>,
    /// The topic and id of the message last received with each payload (entry, index), for acks,
    /// nacks and seeks.
    received: HashMap<(i64, i64), (String, MessageIdData)>,
}

impl RustDriver {
    pub fn new() -> RustDriver {
        RustDriver {
            service_url: String::new(),
            auth: None,
            client: None,
            settings: Settings::default(),
            topic: String::new(),
            topics: Vec::new(),
            topics_pattern: None,
            subscription: String::new(),
            producers: HashMap::new(),
            consumers: HashMap::new(),
            received: HashMap::new(),
        }
    }

    // -- lifecycle ------------------------------------------------------------------------------
    /// Who the driver is. The crate's client connects when it is built, so it is built at the first
    /// program, as the Python client connects at its first use: a hello without `auth` never waits
    /// for a broker. One with `auth` builds it at once, so that credentials the broker refuses are
    /// the hello's error; a broker it cannot reach (within 10 s) is left to the first op.
    pub async fn hello(&mut self, request: &Value) -> Value {
        self.service_url = request
            .get("service_url")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        self.auth = match Auth::of(request.get("auth")) {
            Ok(auth) => auth,
            Err(refused) => return refused,
        };
        if self.auth.is_some() {
            if let Ok(Err(e)) = tokio::time::timeout(AUTH_PROBE_TIMEOUT, self.client()).await {
                if let Some(refused) = auth::refusal(&e) {
                    return refused;
                }
            }
        }
        json!({"client": "rust", "version": CLIENT_VERSION, "protocol": protocol::PROTOCOL,
               "ops": protocol::OPS, "capabilities": protocol::CAPABILITIES})
    }

    pub async fn reset(&mut self, request: &Value) -> Value {
        self.close_program().await;
        match Settings::of_spec(request.get("spec").unwrap_or(&Value::Null)) {
            Ok(settings) => self.settings = settings,
            Err(message) => return error("BadSpec", &message),
        }
        let field = |name: &str| {
            request
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        self.topic = field("topic");
        self.subscription = field("subscription");
        self.topics = Vec::new();
        self.topics_pattern = None;
        let topics = match request.get("topics") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(names)) if names.iter().all(Value::is_string) => {
                names.iter().filter_map(Value::as_str).map(str::to_string).collect()
            }
            Some(other) => return error("BadRequest", &format!("topics is not a list of names: {other}")),
        };
        let pattern = match request.get("topics_pattern") {
            None | Some(Value::Null) => None,
            Some(Value::String(pattern)) => match Regex::new(pattern) {
                Ok(_) => Some(pattern.clone()),
                Err(e) => return error("BadRequest", &format!("topics_pattern {pattern:?}: {e}")),
            },
            Some(other) => return error("BadRequest", &format!("topics_pattern is not a string: {other}")),
        };
        if pattern.is_some() && topics.is_empty() {
            return error("BadRequest", "topics_pattern without the topics it matches");
        }
        (self.topics, self.topics_pattern) = (topics, pattern);
        ok()
    }

    pub async fn close(&mut self) {
        self.close_program().await;
        self.client = None;
    }

    async fn client(&mut self) -> Result<Client, Error> {
        if let Some(client) = &self.client {
            return Ok(client.clone());
        }
        let mut builder = Pulsar::builder(self.service_url.clone(), TokioExecutor).with_operation_retry_options(
            OperationRetryOptions {
                operation_timeout: OPERATION_TIMEOUT,
                retry_delay: RETRY_DELAY,
                max_retries: Some(MAX_RETRIES),
            },
        );
        if let Some(auth) = &self.auth {
            builder = auth.apply(builder)?;
        }
        let client = builder.build().await?;
        self.client = Some(client.clone());
        Ok(client)
    }

    async fn close_program(&mut self) {
        for (_, mut consumer) in self.consumers.drain() {
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, consumer.close()).await;
        }
        for (_, mut producer) in self.producers.drain() {
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, producer.close()).await;
        }
        self.received.clear();
        if self.settings.max_redeliver_count.is_some() {
            // The crate sends dead letters through a producer of the client's own, which would keep
            // reconnecting to the dead-letter topic the suite deletes after the program: a program
            // with a dead-letter policy gets a client of its own.
            self.client = None;
        }
    }

    // -- ops --------------------------------------------------------------------------------------
    pub async fn perform(&mut self, request: &Value) -> Value {
        let name = request
            .get("consumer")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let result = match op_name(request) {
            "send" => return self.send(request).await,
            "receive" => return self.receive(&name, request.get("ms").and_then(Value::as_u64)).await,
            "subscribe" => return self.subscribe(&name).await,
            "tick" => {
                let ms = request.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                return ok();
            }
            "close" => match self.consumers.remove(&name) {
                Some(mut consumer) => consumer.close().await,
                None => return unknown_consumer(&name),
            },
            "acknowledge" | "acknowledge_cumulative" | "negative_acknowledge" | "seek" => {
                return self.on_message(&name, request).await
            }
            other => {
                return error(
                    "UnknownOp",
                    &format!("unknown op {other:?} (known: {})", protocol::OPS.join(", ")),
                )
            }
        };
        result.map_or_else(|e| client_error(&e), |_| ok())
    }

    async fn on_message(&mut self, name: &str, request: &Value) -> Value {
        let message = match message_of(request) {
            Ok(message) => message,
            Err(text) => return error("BadRequest", &text),
        };
        let Some((topic, id)) = self.received.get(&message).cloned() else {
            return error(
                "UnknownMessage",
                &format!("no message {message:?} was received in this program"),
            );
        };
        let client = if op_name(request) == "seek" {
            match self.client().await {
                Ok(client) => Some(client),
                Err(e) => return client_error(&e),
            }
        } else {
            None
        };
        let Some(consumer) = self.consumers.get_mut(name) else {
            return unknown_consumer(name);
        };
        let done = match op_name(request) {
            "acknowledge" => consumer.ack_with_id(&topic, id).await.map_err(Error::Consumer),
            "acknowledge_cumulative" => consumer
                .cumulative_ack_with_id(&topic, id)
                .await
                .map_err(Error::Consumer),
            "negative_acknowledge" => consumer.nack_with_id(&topic, id).await.map_err(Error::Consumer),
            _ => {
                // The crate's seek is the broker's seek, then a new consumer in place of the old
                // one: an error (ConsumerBusy from the new consumer on Exclusive, while the old one
                // reconnects) may come after the broker has sought, so no error says it did not happen.
                // A multi-topic consumer seeks the topic the message came from (a single one takes
                // no topics). The crate then rebuilds each topic's consumer from its topic list,
                // which a pattern consumer leaves empty: a seek on a consumer of several topics
                // needs `partitioned_seek`, which this driver does not declare (drivers/wire.py).
                let topics = (!self.topics.is_empty()).then(|| vec![topic]);
                let sought = consumer
                    .seek(topics, Some(id), None, client.expect("a seek has its client"))
                    .await;
                return sought.map_or_else(|e| failed("info", &error_class(&e), &e.to_string()), |_| ok());
            }
        };
        done.map_or_else(|e| client_error(&e), |_| ok())
    }

    async fn subscribe(&mut self, name: &str) -> Value {
        let client = match self.client().await {
            Ok(client) => client,
            Err(e) => return client_error(&e),
        };
        let settings = &self.settings;
        // The crate takes a receiver queue of 0 as 1000; its flow permits follow the same rule here.
        let permits = if settings.receiver_queue_size == 0 {
            1000
        } else {
            settings.receiver_queue_size
        };
        let options = ConsumerOptions::default()
            .with_initial_position(if settings.earliest {
                InitialPosition::Earliest
            } else {
                InitialPosition::Latest
            })
            .with_receiver_queue_size(settings.receiver_queue_size);
        let mut builder = client.consumer();
        builder = match (&self.topics_pattern, self.topics.is_empty()) {
            (Some(pattern), _) => builder
                .with_topic_regex(Regex::new(pattern).expect("checked at the reset"))
                .with_lookup_namespace(namespace_of(&self.topic)),
            (None, false) => builder.with_topics(&self.topics),
            (None, true) => builder.with_topic(self.topic.clone()),
        };
        let mut builder = builder
            .with_subscription(self.subscription.clone())
            .with_subscription_type(sub_type(&settings.subscription_type))
            .with_consumer_name(name)
            .with_batch_size(permits)
            .with_options(options)
            .with_unacked_message_resend_delay(settings.ack_timeout_ms.map(Duration::from_millis));
        if let Some(max) = settings.max_redeliver_count {
            builder = builder.with_dead_letter_policy(DeadLetterPolicy {
                max_redeliver_count: max,
                dead_letter_topic: format!("{}-{}-DLQ", self.topic, self.subscription),
            });
        }
        match builder.build::<Vec<u8>>().await {
            Ok(consumer) => {
                if let Some(mut old) = self.consumers.insert(name.to_string(), consumer) {
                    let _ = tokio::time::timeout(CLOSE_TIMEOUT, old.close()).await;
                }
                if settings.subscription_type == "Exclusive" {
                    self.close_taken_over(name).await;
                }
                ok()
            }
            Err(e) => client_error(&e),
        }
    }

    /// A newcomer got the Exclusive subscription (after an unload, the old holder may lose the race
    /// to reconnect). The model has the old consumers gone, so they are closed, as an application
    /// that saw them lose the subscription would (drivers/python/driver.py does the same).
    async fn close_taken_over(&mut self, holder: &str) {
        let others: Vec<String> = self
            .consumers
            .keys()
            .filter(|n| n.as_str() != holder)
            .cloned()
            .collect();
        for name in others {
            if let Some(mut consumer) = self.consumers.remove(&name) {
                let _ = tokio::time::timeout(CLOSE_TIMEOUT, consumer.close()).await;
            }
        }
    }

    async fn receive(&mut self, name: &str, ms: Option<u64>) -> Value {
        let Some(consumer) = self.consumers.get_mut(name) else {
            return unknown_consumer(name);
        };
        let wait = Duration::from_millis(ms.filter(|ms| *ms > 0).unwrap_or(RECEIVE_TIMEOUT_MS));
        let message = match tokio::time::timeout(wait, consumer.next()).await {
            Err(_) => return ok(),
            Ok(None) => return failed("info", "ConsumerClosed", "the consumer's message stream ended"),
            Ok(Some(Err(e))) => return client_error(&e),
            Ok(Some(Ok(message))) => message,
        };
        let Some(id) = payload_id(&message.payload.data) else {
            return error(
                "BadPayload",
                &format!("a message not sent by the suite: {:?}", message.payload.data),
            );
        };
        self.received
            .insert(id, (message.topic.clone(), message.message_id().clone()));
        delivered(id.0, id.1, message.key())
    }

    async fn send(&mut self, request: &Value) -> Value {
        let Some(entry) = request.get("entry").and_then(Value::as_i64) else {
            return error("BadRequest", "send needs an entry");
        };
        let keys: Vec<Option<String>> = match request.get("keys").and_then(Value::as_array) {
            Some(keys) if !keys.is_empty() => keys.iter().map(|k| k.as_str().map(str::to_string)).collect(),
            _ => vec![None],
        };
        let batched = request.get("batched").and_then(Value::as_bool).unwrap_or(false);
        let topic = if self.topics.is_empty() {
            self.topic.clone()
        } else {
            let index = request.get("topic").and_then(Value::as_u64).map(|i| i as usize);
            match index.and_then(|i| self.topics.get(i)) {
                Some(topic) => topic.clone(),
                None => {
                    return error(
                        "BadRequest",
                        &format!("send to topic {:?} of {}", request.get("topic"), self.topics.len()),
                    )
                }
            }
        };
        match self.publish(&topic, entry, &keys, batched).await {
            Ok(position) => position,
            Err(e) => client_error(&e),
        }
    }

    async fn publish(
        &mut self,
        topic: &str,
        entry: i64,
        keys: &[Option<String>],
        batched: bool,
    ) -> Result<Value, Error> {
        let client = self.client().await?;
        let slot = (topic.to_string(), batched);
        if !self.producers.contains_key(&slot) {
            let options = if batched {
                ProducerOptions {
                    batch_size: Some(1000),
                    batch_byte_size: Some(64 << 20),
                    block_queue_if_full: true,
                    ..Default::default()
                }
            } else {
                ProducerOptions::default()
            };
            let made = client
                .producer()
                .with_topic(topic)
                .with_options(options)
                .build()
                .await?;
            self.producers.insert(slot.clone(), made);
        }
        let producer = self.producers.get_mut(&slot).expect("made above");
        let mut sends = Vec::with_capacity(keys.len());
        for (index, key) in keys.iter().enumerate() {
            let message = pulsar::producer::Message {
                payload: payload(entry, batched.then_some(index)),
                partition_key: key.clone().filter(|k| !k.is_empty()),
                ..Default::default()
            };
            sends.push(producer.send_non_blocking(message).await?);
        }
        if batched {
            producer.send_batch().await?;
        }
        let mut positions = Vec::with_capacity(sends.len());
        for send in sends {
            let receipt = send.await?;
            let id = receipt.message_id.unwrap_or_default();
            positions.push((id.ledger_id, id.entry_id));
        }
        positions.dedup();
        if positions.len() != 1 {
            return Ok(failed(
                "info",
                "BatchNotOneEntry",
                &format!(
                    "a batch of {} was not published as one entry: {positions:?}",
                    keys.len()
                ),
            ));
        }
        Ok(json!({"outcome": "ok", "position": [positions[0].0, positions[0].1]}))
    }
}

/// The `tenant/namespace` of a topic's full name (`persistent://tenant/namespace/name`), where a
/// pattern's topics are looked up.
fn namespace_of(topic: &str) -> String {
    let path = topic.split_once("://").map_or(topic, |(_, path)| path);
    let mut parts = path.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(tenant), Some(namespace), Some(_)) => format!("{tenant}/{namespace}"),
        _ => "public/default".to_string(),
    }
}

fn sub_type(name: &str) -> SubType {
    match name {
        "Exclusive" => SubType::Exclusive,
        "Failover" => SubType::Failover,
        "Key_Shared" => SubType::KeyShared,
        _ => SubType::Shared,
    }
}

fn unknown_consumer(name: &str) -> Value {
    error(
        "UnknownConsumer",
        &format!("no consumer {name:?} is subscribed in this program"),
    )
}

/// A client error as a reply: `fail` when the broker refused the op (it did not happen), else
/// `info`; refused credentials are an `error` (auth.rs).
fn client_error(e: &Error) -> Value {
    if let Some(refused) = auth::refusal(e) {
        return refused;
    }
    let class = error_class(e);
    let outcome = if class == "ConsumerBusy" { "fail" } else { "info" };
    failed(outcome, &class, &e.to_string())
}

/// The broker's error name when it refused (ConsumerBusy, ServiceNotReady, ...), else the crate's
/// error variants ("Connection.Disconnected").
fn error_class(e: &Error) -> String {
    let connection = match e {
        Error::Connection(c)
        | Error::Consumer(ConsumerError::Connection(c))
        | Error::Producer(ProducerError::Connection(c)) => Some(c),
        _ => None,
    };
    if let Some(ConnectionError::PulsarError(Some(kind), _)) = connection {
        return kind.as_str_name().to_string();
    }
    let debug = format!("{e:?}");
    debug
        .split(|c: char| !c.is_alphanumeric())
        .filter(|s| !s.is_empty())
        .take(2)
        .collect::<Vec<_>>()
        .join(".")
}
