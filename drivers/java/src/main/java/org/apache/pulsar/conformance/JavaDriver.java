package org.apache.pulsar.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pulsar.PulsarVersion;
import org.apache.pulsar.client.api.BatcherBuilder;
import org.apache.pulsar.client.api.ClientBuilder;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.ConsumerBuilder;
import org.apache.pulsar.client.api.DeadLetterPolicy;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.api.TypedMessageBuilder;
import org.apache.pulsar.client.impl.MultiplierRedeliveryBackoff;

/**
 * The Java client (org.apache.pulsar:pulsar-client) behind the driver protocol, op for op as the
 * Python driver (drivers/python/driver.py) does it.
 *
 * <p>Model message ids travel in the payload ("3", or "3.1" for entry 3, batch index 1), so every
 * delivery maps back to the model; a send replies with the broker's position of its entry (ledger,
 * entry). Client errors are replies: {@code fail} when the client refused the op (ConsumerBusy, a
 * cumulative ack on Shared, named as the Python client names them), {@code info} when its effect
 * is unknown (a timeout, any other client error).
 */
final class JavaDriver {
    static final List<String> OPS = List.of("send", "subscribe", "receive", "acknowledge", "acknowledge_cumulative",
            "negative_acknowledge", "redeliver_unacknowledged_messages", "close", "seek", "tick", "reconsume_later");
    static final List<String> CAPABILITIES = List.of("ack_receipts", "nack_backoff", "ack_grouping_time",
            "batch_index_ack", "receiver_queue_0", "ack_timeout", "dead_letter_policy", "redeliver_unacknowledged",
            "seek_by_id", "seek_batch_index", "redelivery_count", "tls_client_cert", "partitioned", "partitioned_seek",
            "retry_letter_topic", "multi_topics", "topics_pattern", "multi_topics_queue");
    // The property a reconsume_later copy carries: its entry in the program (drivers/PROTOCOL.md).
    static final String COPY_PROPERTY = "conformance-entry";
    static final int RECEIVE_TIMEOUT_MS = 100;  // a receive request without `ms`
    static final int NACK_PRECISION_BITS = Integer.parseInt(
            System.getenv().getOrDefault("CONFORMANCE_JAVA_NACK_PRECISION_BITS", "0"));
    static final int OPERATION_TIMEOUT_S = 30;

    /** A request that does not follow the protocol (an unknown consumer, a message never received). */
    static final class ProtocolError extends RuntimeException {
        ProtocolError(String message) {
            super(message);
        }
    }

    private String serviceUrl = "";
    private Auth auth;
    private PulsarClient client;
    private JsonNode spec = Main.JSON.createObjectNode();
    private String topic = "";
    private String subscription = "";
    // A consumer of several topics: theirs (the reset's `topics`), and the pattern that matches them.
    private final List<String> topics = new ArrayList<>();
    private String topicsPattern;
    // Per topic and batching ("<topic> batched"): a program sends through two producers of each topic.
    private final Map<String, Producer<byte[]>> producers = new LinkedHashMap<>();
    private final Map<String, Consumer<byte[]>> consumers = new LinkedHashMap<>();
    // A zero-queue consumer's receive: one receiveAsync (it sends the broker a permit for one
    // message) waits across timed-out receives, and the next receive takes what it got.
    private final Map<String, CompletableFuture<Message<byte[]>>> pending = new LinkedHashMap<>();
    private final Map<String, Message<byte[]>> received = new LinkedHashMap<>();

    // -- lifecycle ----------------------------------------------------------------------------------
    ObjectNode hello(JsonNode request) throws PulsarClientException, InterruptedException {
        serviceUrl = request.path("service_url").asText();
        auth = Auth.of(request.get("auth"));
        client = newClient();
        ObjectNode refused = auth == null ? null : auth.refused(client, serviceUrl);
        if (refused != null) {
            return refused;
        }
        ObjectNode reply = Main.JSON.createObjectNode().put("client", "java").put("version", PulsarVersion.getVersion());
        OPS.forEach(reply.putArray("ops")::add);
        CAPABILITIES.forEach(reply.putArray("capabilities")::add);
        return reply;
    }

    ObjectNode reset(JsonNode request) throws PulsarClientException {
        closeProgram();
        spec = request.path("spec");
        topic = request.path("topic").asText();
        subscription = request.path("subscription").asText();
        topics.clear();
        request.path("topics").forEach(each -> topics.add(each.asText()));
        topicsPattern = request.path("topics_pattern").isTextual() ? request.path("topics_pattern").asText() : null;
        return Replies.ok();
    }

    void close() throws PulsarClientException {
        closeProgram();  // its producers and consumers closed, their sends and acks flushed
        if (client != null) {
            // What is left is the event loop's graceful shutdown (two seconds of quiet period), which
            // the process's exit right after this reply ends anyway.
            client.closeAsync();
            client = null;
        }
    }

    private PulsarClient newClient() throws PulsarClientException {
        ClientBuilder builder = PulsarClient.builder().serviceUrl(serviceUrl)
                .operationTimeout(OPERATION_TIMEOUT_S, TimeUnit.SECONDS);
        return (auth == null ? builder : auth.apply(builder)).build();
    }

    private void closeProgram() throws PulsarClientException {
        for (Consumer<byte[]> consumer : consumers.values()) {
            closeQuietly(consumer);
        }
        for (Producer<byte[]> p : producers.values()) {
            try {
                p.close();
            } catch (PulsarClientException ignored) {
                // not connected: nothing to flush
            }
        }
        consumers.clear();
        pending.clear();
        received.clear();
        producers.clear();
        if (!spec.path("max_redeliver_count").isNull() && !spec.path("max_redeliver_count").isMissingNode()
                && client != null) {
            // A program with a dead-letter policy gets a client of its own: closing the client closes
            // the dead-letter producers its consumers made in the background (as the Python driver
            // does). Not waited for: the client's close ends with its event loop's graceful
            // shutdown, two seconds of quiet period, and the suite deletes dead-letter topics only
            // when the run ends.
            client.closeAsync();
            client = newClient();
        }
    }

    private static void closeQuietly(Consumer<byte[]> consumer) {
        try {
            consumer.close();
        } catch (PulsarClientException ignored) {
            // not connected: nothing to flush
        }
    }

    // -- ops ----------------------------------------------------------------------------------------
    ObjectNode perform(JsonNode request) throws Exception {
        String kind = request.path("op").asText("");
        try {
            return performOp(kind, request);
        } catch (PulsarClientException error) {
            ObjectNode denied = Auth.refusal(error);  // credentials refused later (a restarted broker)
            if (denied != null) {
                return denied;
            }
            return refused(kind, error)
                    ? Replies.failed("fail", refusal(error), error.getMessage())
                    : Replies.failed("info", error.getClass().getSimpleName(), error.getMessage());
        } catch (ProtocolError error) {
            return Replies.error("ProtocolError", error.getMessage());
        }
    }

    /** The refusals the clients agree on, by the Python client's names; anything else is unknown. */
    private static boolean refused(String kind, PulsarClientException error) {
        return error instanceof PulsarClientException.ConsumerBusyException
                || kind.equals("acknowledge_cumulative")
                && error instanceof PulsarClientException.InvalidConfigurationException;
    }

    private static String refusal(PulsarClientException error) {
        return error instanceof PulsarClientException.ConsumerBusyException
                ? "ConsumerBusy" : "CumulativeAcknowledgementNotAllowedError";
    }

    private ObjectNode performOp(String kind, JsonNode request) throws Exception {
        String name = request.path("consumer").asText(null);
        switch (kind) {
            case "send" -> {
                List<String> keys = new ArrayList<>();
                if (request.path("keys").isArray() && !request.path("keys").isEmpty()) {
                    request.path("keys").forEach(k -> keys.add(k.isNull() ? null : k.asText()));
                } else {
                    keys.add(null);
                }
                String to = topics.isEmpty() ? topic : topics.get(request.path("topic").asInt());
                return send(to, request.path("entry").asInt(), keys, request.path("batched").asBoolean(false));
            }
            case "receive" -> {
                int ms = request.path("ms").isNull() || request.path("ms").isMissingNode()
                        ? RECEIVE_TIMEOUT_MS : request.path("ms").asInt();
                return receive(name, ms == 0 ? RECEIVE_TIMEOUT_MS : ms);
            }
            case "subscribe" -> {
                consumers.put(name, subscribe(name));
                if ("Exclusive".equals(spec.path("subscription_type").asText())) {
                    closeTakenOver(name);
                }
            }
            case "acknowledge" -> consumer(name).acknowledge(message(request));
            case "acknowledge_cumulative" -> consumer(name).acknowledgeCumulative(message(request));
            case "negative_acknowledge" -> consumer(name).negativeAcknowledge(message(request));
            case "redeliver_unacknowledged_messages" -> consumer(name).redeliverUnacknowledgedMessages();
            case "reconsume_later" -> {
                // Returns once the copy is published (or dead-lettered) and the message acknowledged.
                JsonNode copy = request.path("copy_entry");
                Map<String, String> properties = copy.isNumber()
                        ? Map.of(COPY_PROPERTY, Integer.toString(copy.asInt())) : Map.of();
                consumer(name).reconsumeLater(message(request), properties, request.path("ms").asLong(0),
                        TimeUnit.MILLISECONDS);
            }
            case "close" -> {
                Consumer<byte[]> consumer = consumer(name);
                pending.remove(name);  // its waiting receive ends with AlreadyClosed
                consumers.remove(name);
                consumer.close();
            }
            case "seek" -> consumer(name).seek(message(request).getMessageId());
            case "tick" -> Thread.sleep(request.path("ms").asLong(0));
            default -> {
                return Replies.error("UnknownOp", "unknown op '" + kind + "' (known: " + String.join(", ", OPS) + ")");
            }
        }
        return Replies.ok();
    }

    private Consumer<byte[]> consumer(String name) {
        Consumer<byte[]> consumer = name == null ? null : consumers.get(name);
        if (consumer == null) {
            throw new ProtocolError("no open consumer " + name + " in this program");
        }
        return consumer;
    }

    private Message<byte[]> message(JsonNode request) {
        String id = payload(request.path("entry").asInt(), request.path("index").asInt(-1));
        Message<byte[]> message = received.get(id);
        if (message == null) {
            throw new ProtocolError("message " + id + " was not received in this program");
        }
        return message;
    }

    /**
     * A newcomer got the Exclusive subscription (after an unload, the old holder may lose the race to
     * reconnect). The old consumers keep reconnecting and could win it back on the next reopen; the
     * model has them gone, so they are closed, as an application that saw them lose it would.
     */
    private void closeTakenOver(String holder) {
        for (String other : new ArrayList<>(consumers.keySet())) {
            if (!other.equals(holder)) {
                pending.remove(other);
                closeQuietly(consumers.remove(other));
            }
        }
    }

    private ObjectNode send(String to, int entry, List<String> keys, boolean batched) throws Exception {
        if (!batched) {
            Producer<byte[]> producer = producers.get(to);
            if (producer == null) {
                producer = client.newProducer().topic(to).enableBatching(false)
                        .sendTimeout(OPERATION_TIMEOUT_S, TimeUnit.SECONDS).create();
                producers.put(to, producer);
            }
            MessageId sent = withKey(producer.newMessage(), keys.get(0)).value(payload(entry, -1).getBytes(
                    StandardCharsets.UTF_8)).send();
            return position(sent);
        }
        Producer<byte[]> batchProducer = producers.get(to + " batched");
        if (batchProducer == null) {
            batchProducer = client.newProducer().topic(to).enableBatching(true).batchingMaxMessages(1000)
                    .batchingMaxPublishDelay(60, TimeUnit.SECONDS).blockIfQueueFull(true)
                    .sendTimeout(OPERATION_TIMEOUT_S, TimeUnit.SECONDS)
                    .batcherBuilder("Key_Shared".equals(spec.path("subscription_type").asText())
                            ? BatcherBuilder.KEY_BASED : BatcherBuilder.DEFAULT)
                    .create();
            producers.put(to + " batched", batchProducer);
        }
        List<CompletableFuture<MessageId>> sends = new ArrayList<>();
        for (int index = 0; index < keys.size(); index++) {
            sends.add(withKey(batchProducer.newMessage(), keys.get(index))
                    .value(payload(entry, index).getBytes(StandardCharsets.UTF_8)).sendAsync());
        }
        batchProducer.flush();
        List<MessageIdAdv> ids = new ArrayList<>();
        try {
            for (CompletableFuture<MessageId> sent : sends) {
                ids.add((MessageIdAdv) sent.get(OPERATION_TIMEOUT_S, TimeUnit.SECONDS));
            }
        } catch (ExecutionException error) {
            Throwable cause = error.getCause() == null ? error : error.getCause();
            return Replies.failed("info", cause.getClass().getSimpleName(), cause.getMessage());
        } catch (TimeoutException error) {
            return Replies.failed("info", "Timeout", "batch of " + keys.size() + " not confirmed within "
                    + OPERATION_TIMEOUT_S + " s");
        }
        long entries = ids.stream().map(i -> i.getLedgerId() + ":" + i.getEntryId()).distinct().count();
        if (entries != 1) {
            return Replies.failed("info", "BatchNotOneEntry", "batch of " + keys.size()
                    + " was not published as one entry: " + ids);
        }
        return position(ids.get(0));
    }

    private static TypedMessageBuilder<byte[]> withKey(TypedMessageBuilder<byte[]> message, String key) {
        return key == null || key.isEmpty() ? message : message.key(key);
    }

    private static ObjectNode position(MessageId sent) {
        MessageIdAdv id = (MessageIdAdv) sent;
        ObjectNode reply = Replies.ok();
        reply.putArray("position").add(id.getLedgerId()).add(id.getEntryId());
        if (id.getPartitionIndex() >= 0) {
            reply.put("partition", id.getPartitionIndex()); // a partitioned topic's: the partition it went to
        }
        return reply;
    }

    private Consumer<byte[]> subscribe(String name) throws PulsarClientException {
        ConsumerBuilder<byte[]> builder = (topicsPattern != null ? client.newConsumer().topicsPattern(topicsPattern)
                : topics.isEmpty() ? client.newConsumer().topic(topic) : client.newConsumer().topics(topics))
                .subscriptionName(subscription)
                .consumerName(name)
                .subscriptionType(SubscriptionType.valueOf(spec.path("subscription_type").asText("Shared")))
                .subscriptionInitialPosition("Latest".equals(spec.path("initial_position").asText())
                        ? SubscriptionInitialPosition.Latest : SubscriptionInitialPosition.Earliest)
                .receiverQueueSize(spec.path("receiver_queue_size").asInt(1000))
                .acknowledgmentGroupTime(spec.path("ack_grouping_ms").asLong(100), TimeUnit.MILLISECONDS)
                .negativeAckRedeliveryDelay(spec.path("nack_delay_ms").asLong(60_000), TimeUnit.MILLISECONDS)
                // Exact due times: with the default of 8 bits the tracker trims them to 256 ms
                // buckets, and a nack made while its timer runs comes back up to 255 ms early.
                // CONFORMANCE_JAVA_NACK_PRECISION_BITS sets another (the client's default, 8, for KD-17).
                .negativeAckRedeliveryDelayPrecision(NACK_PRECISION_BITS)
                .enableBatchIndexAcknowledgment(spec.path("client_batch_index_ack").asBoolean(false))
                .isAckReceiptEnabled(spec.path("ack_receipts").asBoolean(false));
        if (spec.path("ack_timeout_ms").isNumber()) {
            builder.ackTimeout(spec.path("ack_timeout_ms").asLong(), TimeUnit.MILLISECONDS)
                    .ackTimeoutTickTime(spec.path("ack_timeout_tick_ms").asLong(1000), TimeUnit.MILLISECONDS);
        }
        if (spec.path("max_redeliver_count").isNumber()) {
            builder.deadLetterPolicy(DeadLetterPolicy.builder()
                    .maxRedeliverCount(spec.path("max_redeliver_count").asInt()).build());
        }
        if (spec.path("retry_letter_topic").asBoolean(false)) {
            // The topic and <topic>-<subscription>-RETRY under one multi-topics consumer; the
            // dead-letter topic's name is filled in too (ConsumerBuilderImpl.subscribeAsync).
            builder.enableRetry(true);
        }
        JsonNode backoff = spec.path("nack_backoff");
        if (backoff.isObject()) {
            // The nack of a message waits backoff.next(its redelivery count) instead of the nack
            // delay (NegativeAcksTracker.add(Message)): negativeAcknowledge is given the Message.
            builder.negativeAckRedeliveryBackoff(MultiplierRedeliveryBackoff.builder()
                    .minDelayMs(backoff.path("min_ms").asLong(1000)).maxDelayMs(backoff.path("max_ms").asLong(60_000))
                    .multiplier(backoff.path("multiplier").asDouble(2.0)).build());
        }
        return builder.subscribe();
    }

    private ObjectNode receive(String name, int timeoutMs) throws Exception {
        Consumer<byte[]> consumer = consumer(name);
        Message<byte[]> message;
        if (spec.path("receiver_queue_size").asInt(1000) == 0) {
            // The Java client refuses a timed receive on a zero queue (InvalidConfiguration).
            CompletableFuture<Message<byte[]>> waiting = pending.computeIfAbsent(name, n -> consumer.receiveAsync());
            try {
                message = waiting.get(timeoutMs, TimeUnit.MILLISECONDS);
            } catch (TimeoutException nothing) {
                return Replies.ok();
            } catch (ExecutionException error) {
                pending.remove(name);
                throw error.getCause() instanceof PulsarClientException cause ? cause : error;
            }
            pending.remove(name);
        } else {
            message = consumer.receive(timeoutMs, TimeUnit.MILLISECONDS);
            if (message == null) {
                return Replies.ok();
            }
        }
        String copy = message.getProperty(COPY_PROPERTY);
        String data = copy != null ? copy : new String(message.getData(), StandardCharsets.UTF_8);
        received.put(data, message);
        int dot = data.indexOf('.');
        ObjectNode reply = Replies.ok()
                .put("delivered_entry", Integer.parseInt(dot < 0 ? data : data.substring(0, dot)))
                .put("delivered_index", dot < 0 ? -1 : Integer.parseInt(data.substring(dot + 1)))
                .put("redelivery_count", message.getRedeliveryCount());
        if (message.hasKey() && !message.getKey().isEmpty()) {
            reply.put("key", message.getKey());
        } else {
            reply.putNull("key");
        }
        return reply;
    }

    private static String payload(int entry, int index) {
        return index < 0 ? Integer.toString(entry) : entry + "." + index;
    }
}
