// The hello's `auth` (drivers/PROTOCOL.md): Pulsar token authentication (NewAuthenticationToken)
// and TLS: the broker's certificate checked against TLSTrustCertsFilePath, its host name unless told
// not to (TLSValidateHostname), and a client certificate for mutual TLS (TLSCertificateFile,
// TLSKeyFilePath).
//
// The Go client (0.21.0) retries a connection the broker refused (a token it does not accept, a
// failed TLS handshake) until the operation timeout, and then answers "connection error": why is
// said only in its log ("Failed to establish connection with broker: 'Failed to authenticate'",
// "Failed to connect to broker." with the TLS error). So the driver reads its log: a hello with
// auth makes one lookup and answers the first refusal the log shows as its error reply at once, and
// an op that fails after the log showed a refusal answers with that refusal.
package main

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// authProbeTimeout bounds a hello's first lookup; a broker not reached by then is left to the first op.
const authProbeTimeout = 10 * time.Second

// probeTopic is what a hello's lookup asks the partitions of (it creates nothing).
const probeTopic = "persistent://public/default/conformance-driver-hello"

type authOptions struct {
	token, trustCerts, cert, key string
	hostnameVerification         bool
}

// authOf is the hello's auth, or nil when it has none (the client is built as without credentials).
func authOf(raw any) *authOptions {
	fields, ok := raw.(map[string]any)
	if !ok {
		return nil
	}
	text := func(name string) string { value, _ := fields[name].(string); return value }
	verify, given := fields["tls_hostname_verification"].(bool)
	return &authOptions{token: text("token"), trustCerts: text("tls_trust_certs"), cert: text("tls_cert"),
		key: text("tls_key"), hostnameVerification: verify || !given}
}

func (a *authOptions) apply(options *pulsar.ClientOptions) {
	if a.token != "" {
		options.Authentication = pulsar.NewAuthenticationToken(a.token)
	}
	options.TLSTrustCertsFilePath = a.trustCerts
	options.TLSValidateHostname = a.hostnameVerification
	options.TLSCertificateFile, options.TLSKeyFilePath = a.cert, a.key
}

// connectionWatch stands in front of the driver's log handler and passes on, besides every record,
// the refusals of a connection that it reads in the client's log. The client's WithError is a
// logger With the error: the watch of that logger keeps it.
type connectionWatch struct {
	slog.Handler
	refusals chan map[string]any
	failure  string
}

func newConnectionWatch(handler slog.Handler) *connectionWatch {
	return &connectionWatch{Handler: handler, refusals: make(chan map[string]any, 1)}
}

func (w *connectionWatch) Handle(ctx context.Context, record slog.Record) error {
	if reply := refusalIn(record, w.failure); reply != nil {
		select {
		case w.refusals <- reply:
		default: // one unread is enough
		}
	}
	return w.Handler.Handle(ctx, record)
}

func (w *connectionWatch) WithAttrs(attrs []slog.Attr) slog.Handler {
	failure := w.failure
	for _, attr := range attrs {
		if attr.Key == "error" {
			failure = attr.Value.String()
		}
	}
	return &connectionWatch{Handler: w.Handler.WithAttrs(attrs), refusals: w.refusals, failure: failure}
}

func (w *connectionWatch) WithGroup(name string) slog.Handler {
	return &connectionWatch{Handler: w.Handler.WithGroup(name), refusals: w.refusals, failure: w.failure}
}

// refusalIn is the error reply a client log record means, or nil: the broker's answer to its
// Connect when it speaks of authentication, a TLS dial that failed.
func refusalIn(record slog.Record, failure string) map[string]any {
	record.Attrs(func(attr slog.Attr) bool {
		if attr.Key == "error" {
			failure = attr.Value.String()
		}
		return true
	})
	said := strings.TrimPrefix(record.Message, "Failed to establish connection with broker: ")
	switch {
	case said != record.Message && strings.Contains(strings.ToLower(said), "authenticat"):
		return errorReply("AuthenticationError", "authentication failed: the broker answered the connect with "+said)
	case record.Message == "Failed to connect to broker." &&
		(strings.Contains(failure, "tls: ") || strings.Contains(failure, "x509: ")):
		return errorReply("TlsError", "the TLS handshake with the broker failed: "+failure)
	}
	return nil
}

// refused is the error reply when the broker refuses this client's first connection, else nil.
func (w *connectionWatch) refused(client pulsar.Client) map[string]any {
	for len(w.refusals) > 0 {
		<-w.refusals
	}
	done := make(chan error, 1)
	go func() {
		_, err := client.TopicPartitions(probeTopic)
		done <- err
	}()
	select {
	case reply := <-w.refusals:
		return reply
	case <-done:
		return nil
	case <-time.After(authProbeTimeout):
		return nil
	}
}
