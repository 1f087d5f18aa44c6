// The Go client (github.com/apache/pulsar-client-go) behind the driver protocol, op for op as the
// Python driver (drivers/python/driver.py) does it.
//
// Model message ids travel in the payload ("3", or "3.1" for entry 3, batch index 1), so every
// delivery maps back to the model; a send replies with the broker's position of its entry (ledger,
// entry). Client errors are replies: `fail` when the client refused the op (ConsumerBusy, a
// cumulative ack on Shared or Key_Shared, named as the Python client names them), `info` when its
// effect is unknown (a timeout, any other client error).
//
// What the Go client has no API for is not declared: an ack timeout (none by design) and a public
// redeliverUnacknowledgedMessages; checks that need them are not applicable for this client.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"
)

const (
	clientModule       = "github.com/apache/pulsar-client-go"
	receiveTimeoutMs   = 100 // a receive request without `ms`
	operationTimeout   = 30 * time.Second
	minNackDelayMs     = 100 // the spec's effective nack delay (model/spec.py): the Go client takes 0 as its 1 min default
	defaultAckGrouping = 100 // the spec's ack_grouping_ms that leaves the client's own grouping (100 ms, 1000 acks)
)

var (
	ops = []string{"send", "subscribe", "receive", "acknowledge", "acknowledge_cumulative",
		"negative_acknowledge", "close", "seek", "tick"}
	capabilities = []string{"nack_backoff", "ack_grouping_time", "batch_index_ack", "receiver_queue_0",
		"dead_letter_policy", "seek_by_id", "seek_acks_skipped", "redelivery_count", "tls_client_cert", "partitioned",
		"multi_topics", "topics_pattern"}
	exactNackTime = int64(0)
	consumerTypes = map[string]pulsar.SubscriptionType{
		"Exclusive": pulsar.Exclusive, "Failover": pulsar.Failover, "Shared": pulsar.Shared,
		"Key_Shared": pulsar.KeyShared,
	}
)

// protocolError: a request that does not follow the protocol (an unknown consumer, a message never received).
type protocolError struct{ message string }

func (e protocolError) Error() string { return e.message }

// pendingReceive is a zero-queue consumer's receive: one Receive (it sends the broker a permit for
// one message) waits across timed-out receive requests, and the next request takes what it got.
// A Receive given a timeout of its own would leave a permit behind each time it timed out.
type pendingReceive struct {
	cancel context.CancelFunc
	result chan receiveResult
}

type receiveResult struct {
	message pulsar.Message
	err     error
}

type goDriver struct {
	logger        *slog.Logger
	watch         *connectionWatch
	serviceURL    string
	client        pulsar.Client
	spec          map[string]any
	topic         string
	subscription  string
	topics        []string // a consumer of several topics: theirs (the reset's), else none
	topicsPattern string   // and the pattern that matches them alone, to subscribe by
	// Per topic and batching: a program sends through two producers of each topic it sends to.
	producers map[producerKey]pulsar.Producer
	consumers map[string]pulsar.Consumer
	pending   map[string]*pendingReceive
	received  map[string]pulsar.Message
}

type producerKey struct {
	topic   string
	batched bool
}

func newDriver(logger *slog.Logger) *goDriver {
	watch := newConnectionWatch(logger.Handler())
	return &goDriver{logger: slog.New(watch), watch: watch, spec: map[string]any{},
		consumers: map[string]pulsar.Consumer{}, producers: map[producerKey]pulsar.Producer{}, pending: map[string]*pendingReceive{},
		received: map[string]pulsar.Message{}}
}

// -- lifecycle --------------------------------------------------------------------------------------
func (d *goDriver) hello(request map[string]any) map[string]any {
	d.serviceURL, _ = request["service_url"].(string)
	options := pulsar.ClientOptions{URL: d.serviceURL, OperationTimeout: operationTimeout,
		Logger: pulsarlog.NewLoggerWithSlog(d.logger)}
	auth := authOf(request["auth"])
	if auth != nil {
		hide(auth.token)
		auth.apply(&options)
	}
	client, err := pulsar.NewClient(options)
	if err != nil {
		return errorReply(className(err), err.Error())
	}
	d.client = client
	if auth != nil {
		if refused := d.watch.refused(client); refused != nil {
			return refused
		}
	}
	return map[string]any{"client": "go", "version": clientVersion(), "ops": ops, "capabilities": capabilities}
}

// clientVersion is the pulsar-client-go version this binary was built with ("0.21.0").
func clientVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == clientModule {
				return strings.TrimPrefix(dep.Version, "v")
			}
		}
	}
	return "unknown"
}

func (d *goDriver) reset(request map[string]any) map[string]any {
	d.closeProgram()
	spec, _ := request["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	if spec["ack_timeout_ms"] != nil {
		return errorReply("UnsupportedSetting", "the Go client has no ack timeout (spec ack_timeout_ms)")
	}
	d.spec = spec
	d.topic, _ = request["topic"].(string)
	d.subscription, _ = request["subscription"].(string)
	d.topics = nil
	if raw, ok := request["topics"].([]any); ok {
		for _, each := range raw {
			if name, ok := each.(string); ok {
				d.topics = append(d.topics, name)
			}
		}
	}
	d.topicsPattern, _ = request["topics_pattern"].(string)
	return okReply()
}

func (d *goDriver) close() {
	d.closeProgram()
	if d.client != nil {
		d.client.Close()
		d.client = nil
	}
}

func (d *goDriver) closeProgram() {
	for name := range d.consumers {
		d.closeConsumer(name)
	}
	for _, producer := range d.producers {
		producer.Close()
	}
	d.producers = map[producerKey]pulsar.Producer{}
	d.received = map[string]pulsar.Message{}
}

// closeConsumer ends its waiting receive first: a zero-queue consumer's Close waits for the lock
// its Receive holds.
func (d *goDriver) closeConsumer(name string) {
	d.stopPending(name)
	if consumer, ok := d.consumers[name]; ok {
		delete(d.consumers, name)
		consumer.Close()
	}
}

func (d *goDriver) stopPending(name string) {
	if waiting, ok := d.pending[name]; ok {
		delete(d.pending, name)
		waiting.cancel()
		select {
		case <-waiting.result:
		case <-time.After(5 * time.Second):
			d.logger.Warn("a zero-queue receive did not end when cancelled", "consumer", name)
		}
	}
}

// -- ops --------------------------------------------------------------------------------------------
func (d *goDriver) perform(request map[string]any) map[string]any {
	kind, _ := request["op"].(string)
	reply, err := d.performOp(kind, request)
	var invalid protocolError
	switch {
	case err == nil:
		return reply
	case errors.As(err, &invalid):
		return errorReply("ProtocolError", err.Error())
	case strings.Contains(err.Error(), "ConsumerBusy"):
		return failed("fail", "ConsumerBusy", err.Error())
	case kind == "acknowledge_cumulative" && errors.Is(err, pulsar.ErrInvalidAck):
		return failed("fail", "CumulativeAcknowledgementNotAllowedError", err.Error())
	default:
		select {
		case refused := <-d.watch.refusals: // why the client's connection failed (auth.go)
			return refused
		default:
			return failed("info", className(err), err.Error())
		}
	}
}

func (d *goDriver) performOp(kind string, request map[string]any) (map[string]any, error) {
	name, _ := request["consumer"].(string)
	switch kind {
	case "send":
		keys := []string{""}
		if raw, ok := request["keys"].([]any); ok && len(raw) > 0 {
			keys = make([]string, len(raw))
			for i, key := range raw {
				keys[i], _ = key.(string)
			}
		}
		batched, _ := request["batched"].(bool)
		topic := d.topic
		if len(d.topics) > 0 {
			index := intOf(request["topic"], -1)
			if index < 0 || index >= len(d.topics) {
				return nil, protocolError{fmt.Sprintf("send to topic %v of %d", request["topic"], len(d.topics))}
			}
			topic = d.topics[index]
		}
		return d.send(topic, intOf(request["entry"], 0), keys, batched)
	case "receive":
		ms := intOf(request["ms"], 0)
		if ms <= 0 {
			ms = receiveTimeoutMs
		}
		return d.receive(name, time.Duration(ms)*time.Millisecond)
	case "subscribe":
		consumer, err := d.subscribe(name)
		if err != nil {
			return nil, err
		}
		d.consumers[name] = consumer
		if d.specString("subscription_type", "Shared") == "Exclusive" {
			d.closeTakenOver(name)
		}
	case "acknowledge", "acknowledge_cumulative", "negative_acknowledge", "seek":
		consumer, err := d.consumer(name)
		if err != nil {
			return nil, err
		}
		message, err := d.message(request)
		if err != nil {
			return nil, err
		}
		switch kind {
		case "acknowledge":
			err = consumer.Ack(message)
		case "acknowledge_cumulative":
			err = consumer.AckCumulative(message)
		case "negative_acknowledge":
			consumer.Nack(message)
		case "seek":
			d.stopPending(name) // a zero-queue consumer's Seek waits for the lock its Receive holds
			err = consumer.Seek(message.ID())
		}
		if err != nil {
			return nil, err
		}
	case "close":
		if _, err := d.consumer(name); err != nil {
			return nil, err
		}
		d.closeConsumer(name)
	case "tick":
		time.Sleep(time.Duration(intOf(request["ms"], 0)) * time.Millisecond)
	default:
		return errorReply("UnknownOp", fmt.Sprintf("unknown op %q (known: %s)", kind, strings.Join(ops, ", "))), nil
	}
	return okReply(), nil
}

func (d *goDriver) consumer(name string) (pulsar.Consumer, error) {
	if consumer, ok := d.consumers[name]; ok {
		return consumer, nil
	}
	return nil, protocolError{fmt.Sprintf("no open consumer %q in this program", name)}
}

func (d *goDriver) message(request map[string]any) (pulsar.Message, error) {
	id := payload(intOf(request["entry"], -1), intOf(request["index"], -1))
	if message, ok := d.received[id]; ok {
		return message, nil
	}
	return nil, protocolError{fmt.Sprintf("message %s was not received in this program", id)}
}

// closeTakenOver: a newcomer got the Exclusive subscription (after an unload, the old holder may
// lose the race to reconnect). The model has the old consumers gone, so they are closed, as an
// application that saw them lose the subscription would.
func (d *goDriver) closeTakenOver(holder string) {
	for name := range d.consumers {
		if name != holder {
			d.closeConsumer(name)
		}
	}
}

func (d *goDriver) send(topic string, entry int, keys []string, batched bool) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), operationTimeout)
	defer cancel()
	if !batched {
		producer := d.producers[producerKey{topic, false}]
		if producer == nil {
			made, err := d.client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true,
				SendTimeout: operationTimeout})
			if err != nil {
				return nil, err
			}
			producer = made
			d.producers[producerKey{topic, false}] = producer
		}
		sent, err := producer.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload(entry, -1)), Key: keys[0]})
		if err != nil {
			return nil, err
		}
		return d.position(sent), nil
	}
	batchProducer := d.producers[producerKey{topic, true}]
	if batchProducer == nil {
		options := pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 1000,
			BatchingMaxPublishDelay: 60 * time.Second, SendTimeout: operationTimeout}
		if d.specString("subscription_type", "Shared") == "Key_Shared" {
			options.BatcherBuilderType = pulsar.KeyBasedBatchBuilder
		}
		made, err := d.client.CreateProducer(options)
		if err != nil {
			return nil, err
		}
		batchProducer = made
		d.producers[producerKey{topic, true}] = batchProducer
	}
	var mutex sync.Mutex
	var sends sync.WaitGroup
	ids := make([]pulsar.MessageID, 0, len(keys))
	var failure error
	for index, key := range keys {
		sends.Add(1)
		batchProducer.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte(payload(entry, index)), Key: key},
			func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				mutex.Lock()
				defer mutex.Unlock()
				if err != nil {
					failure = err
				} else {
					ids = append(ids, id)
				}
				sends.Done()
			})
	}
	if err := batchProducer.FlushWithCtx(ctx); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { sends.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return failed("info", "Timeout", fmt.Sprintf("batch of %d not confirmed within %s", len(keys),
			operationTimeout)), nil
	}
	if failure != nil {
		return nil, failure
	}
	entries := map[[2]int64]bool{}
	for _, id := range ids {
		entries[[2]int64{id.LedgerID(), id.EntryID()}] = true
	}
	if len(entries) != 1 {
		return failed("info", "BatchNotOneEntry", fmt.Sprintf("batch of %d was not published as one entry: %v",
			len(keys), ids)), nil
	}
	return d.position(ids[0]), nil
}

func (d *goDriver) position(id pulsar.MessageID) map[string]any {
	reply := okReply()
	reply["position"] = []int64{id.LedgerID(), id.EntryID()}
	if intOf(d.spec["partitions"], 0) > 0 {
		// A partitioned topic's send names the partition its entry went to (on a topic without
		// partitions the Go client says 0).
		reply["partition"] = id.PartitionIdx()
	}
	return reply
}

func (d *goDriver) subscribe(name string) (pulsar.Consumer, error) {
	kind, ok := consumerTypes[d.specString("subscription_type", "Shared")]
	if !ok {
		return nil, protocolError{fmt.Sprintf("unknown subscription_type %v", d.spec["subscription_type"])}
	}
	options := pulsar.ConsumerOptions{SubscriptionName: d.subscription, Name: name, Type: kind,
		SubscriptionInitialPosition:    pulsar.SubscriptionPositionEarliest,
		NackRedeliveryDelay:            time.Duration(max(intOf(d.spec["nack_delay_ms"], 60_000), minNackDelayMs)) * time.Millisecond,
		EnableBatchIndexAcknowledgment: d.spec["client_batch_index_ack"] == true}
	// The spec's nack delay is a lower bound, as the C++ and Java 4.0 clients keep it: the Go
	// client's default precision (8 bits) files a nack under its due time rounded down to 256 ms, so
	// a nacked message could come back up to 255 ms before the delay.
	options.NackPrecisionBit = &exactNackTime
	switch {
	case d.topicsPattern != "":
		options.TopicsPattern = d.topicsPattern
	case len(d.topics) > 0:
		options.Topics = d.topics
	default:
		options.Topic = d.topic
	}
	if d.specString("initial_position", "Earliest") == "Latest" {
		options.SubscriptionInitialPosition = pulsar.SubscriptionPositionLatest
	}
	if queue := intOf(d.spec["receiver_queue_size"], 1000); queue == 0 {
		options.EnableZeroQueueConsumer = true
	} else {
		options.ReceiverQueueSize = queue
	}
	if grouping := intOf(d.spec["ack_grouping_ms"], defaultAckGrouping); grouping != defaultAckGrouping {
		// MaxSize 0 sends every ack at once; otherwise acks wait up to MaxTime, as the Java client's grouping time.
		options.AckGroupingOptions = &pulsar.AckGroupingOptions{MaxSize: 1000,
			MaxTime: time.Duration(grouping) * time.Millisecond}
		if grouping == 0 {
			options.AckGroupingOptions.MaxSize = 0
		}
	}
	if backoff, ok := d.spec["nack_backoff"].(map[string]any); ok {
		// Consumer.Nack(message) then waits Next(its redelivery count) instead of the nack delay.
		options.NackBackoffPolicy = multiplierBackoff{minMs: int64(intOf(backoff["min_ms"], 1000)),
			maxMs: int64(intOf(backoff["max_ms"], 60_000)), multiplier: floatOf(backoff["multiplier"], 2)}
	}
	if maxRedeliver := intOf(d.spec["max_redeliver_count"], -1); maxRedeliver >= 0 {
		// The spec's count is of redeliveries, the Go client's of deliveries: N redeliveries are N+1
		// deliveries. The dead-letter topic is the other clients' default, which Go does not make.
		options.DLQ = &pulsar.DLQPolicy{MaxDeliveries: uint32(maxRedeliver + 1),
			DeadLetterTopic: d.topic + "-" + d.subscription + "-DLQ"}
	}
	return d.client.Subscribe(options)
}

func (d *goDriver) receive(name string, timeout time.Duration) (map[string]any, error) {
	consumer, err := d.consumer(name)
	if err != nil {
		return nil, err
	}
	var message pulsar.Message
	if intOf(d.spec["receiver_queue_size"], 1000) == 0 {
		waiting, ok := d.pending[name]
		if !ok {
			ctx, cancel := context.WithCancel(context.Background())
			waiting = &pendingReceive{cancel: cancel, result: make(chan receiveResult, 1)}
			d.pending[name] = waiting
			go func() {
				message, err := consumer.Receive(ctx)
				waiting.result <- receiveResult{message, err}
			}()
		}
		select {
		case got := <-waiting.result:
			delete(d.pending, name)
			waiting.cancel()
			if got.err != nil {
				return nil, got.err
			}
			message = got.message
		case <-time.After(timeout):
			return okReply(), nil
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		message, err = consumer.Receive(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			return okReply(), nil
		}
		if err != nil {
			return nil, err
		}
	}
	data := string(message.Payload())
	d.received[data] = message
	entry, index, found := strings.Cut(data, ".")
	reply := okReply()
	reply["delivered_entry"], _ = strconv.Atoi(entry)
	reply["delivered_index"] = -1
	if found {
		reply["delivered_index"], _ = strconv.Atoi(index)
	}
	reply["redelivery_count"] = message.RedeliveryCount()
	reply["key"] = nil
	if key := message.Key(); key != "" {
		reply["key"] = key
	}
	return reply, nil
}

func (d *goDriver) specString(field, otherwise string) string {
	if value, ok := d.spec[field].(string); ok {
		return value
	}
	return otherwise
}

func payload(entry, index int) string {
	if index < 0 {
		return strconv.Itoa(entry)
	}
	return fmt.Sprintf("%d.%d", entry, index)
}

// className names a client error for a reply: the client's result name ("TimeoutError",
// "ConsumerClosed") when it has one, "Timeout" for a context deadline, else the error's Go type.
func className(err error) string {
	var clientError *pulsar.Error
	if errors.As(err, &clientError) {
		text := clientError.Error()
		if cut := strings.LastIndex(text, ": "); cut >= 0 {
			return text[cut+2:]
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "Timeout"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", err), "*")
}

// multiplierBackoff is the Java client's MultiplierRedeliveryBackoff (pulsar-client 4.0.7) as a Go
// NackBackoffPolicy, so that the spec's nack_backoff means the same delays in both clients: min for
// count 0, then min(floor(min * multiplier^count), max), max past the power where it is reached.
type multiplierBackoff struct {
	minMs, maxMs int64
	multiplier   float64
}

func (b multiplierBackoff) Next(redeliveryCount uint32) time.Duration {
	if redeliveryCount == 0 || b.minMs <= 0 {
		return time.Duration(b.minMs) * time.Millisecond
	}
	maxPow := int64(math.Log(float64(b.maxMs)/float64(b.minMs))/math.Log(b.multiplier)) + 1
	if int64(redeliveryCount) > maxPow {
		return time.Duration(b.maxMs) * time.Millisecond
	}
	delay := min(int64(float64(b.minMs)*math.Pow(b.multiplier, float64(redeliveryCount))), b.maxMs)
	return time.Duration(delay) * time.Millisecond
}

func floatOf(value any, otherwise float64) float64 {
	switch v := value.(type) {
	case json.Number:
		if f, err := v.Float64(); err == nil {
			return f
		}
	case float64:
		return v
	}
	return otherwise
}
