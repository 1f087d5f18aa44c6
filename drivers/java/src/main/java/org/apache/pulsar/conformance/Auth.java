package org.apache.pulsar.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.security.GeneralSecurityException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.apache.pulsar.client.api.AuthenticationFactory;
import org.apache.pulsar.client.api.ClientBuilder;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.impl.PulsarClientImpl;
import org.apache.pulsar.common.util.SecurityUtility;

/**
 * The hello's {@code auth} (drivers/PROTOCOL.md): Pulsar token authentication
 * ({@code AuthenticationFactory.token}) and TLS: the broker's certificate checked against
 * {@code tlsTrustCertsFilePath}, its host name unless told not to, and a client certificate for
 * mutual TLS ({@code tlsCertificateFilePath}, {@code tlsKeyFilePath}).
 *
 * <p>The Java client takes a refused token for a retriable error
 * ({@code PulsarClientException.isRetriableError}), and a failed TLS handshake for a lost
 * connection: a producer or consumer asks again until its operation timeout (30 s here). So a hello
 * with {@code auth} makes one connection to the service URL first, without retries, and the
 * broker's AuthenticationError or a failed handshake is the hello's error reply within seconds. Any
 * other failure of that connection (no broker yet) is left to the first op, as without {@code auth}.
 * The client reports a failed handshake only as "Connection already closed" (the
 * SSLHandshakeException stays in its log), so the driver then shakes hands itself, with the
 * client's TLS files read by Pulsar's own SecurityUtility, to say why.
 */
final class Auth {
    static final int PROBE_TIMEOUT_S = 10;

    private final String token;
    private final String trustCerts;
    private final boolean hostnameVerification;
    private final String cert;
    private final String key;

    private Auth(JsonNode auth) {
        token = text(auth, "token");
        trustCerts = text(auth, "tls_trust_certs");
        hostnameVerification = auth.path("tls_hostname_verification").asBoolean(true);
        cert = text(auth, "tls_cert");
        key = text(auth, "tls_key");
        Secrets.hide(token);
    }

    /** The hello's auth, or null when it has none (the client is built as without credentials). */
    static Auth of(JsonNode auth) {
        return auth == null || !auth.isObject() ? null : new Auth(auth);
    }

    ClientBuilder apply(ClientBuilder builder) {
        if (token != null) {
            builder.authentication(AuthenticationFactory.token(token));
        }
        if (trustCerts != null) {
            builder.tlsTrustCertsFilePath(trustCerts);
        }
        builder.enableTlsHostnameVerification(hostnameVerification);
        if (cert != null) {
            builder.tlsCertificateFilePath(cert).tlsKeyFilePath(key);
        }
        return builder;
    }

    /** The error reply when the broker refuses this client's credentials on a first connection, else null. */
    ObjectNode refused(PulsarClient client, String serviceUrl) throws InterruptedException {
        try {
            ((PulsarClientImpl) client).getConnectionToServiceUrl().get(PROBE_TIMEOUT_S, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException error) {
            ObjectNode refusal = refusal(error.getCause());
            return refusal != null ? refusal : handshakeFailure(serviceUrl);
        } catch (TimeoutException error) {
            return null;
        }
    }

    /** The TlsError of a TLS handshake with the service URL's first host and these TLS files, else null. */
    private ObjectNode handshakeFailure(String serviceUrl) {
        String scheme = "pulsar+ssl://";
        if (!serviceUrl.startsWith(scheme)) {
            return null;
        }
        String address = serviceUrl.substring(scheme.length()).split("[,/]")[0];
        int colon = address.lastIndexOf(':');
        try {
            SSLContext context = SecurityUtility.createSslContext(false, trustCerts, cert, key, null);
            try (SSLSocket socket = (SSLSocket) context.getSocketFactory().createSocket()) {
                socket.connect(new InetSocketAddress(address.substring(0, colon),
                        Integer.parseInt(address.substring(colon + 1))), PROBE_TIMEOUT_S * 1000);
                socket.setSoTimeout(PROBE_TIMEOUT_S * 1000);
                if (hostnameVerification) {
                    SSLParameters parameters = socket.getSSLParameters();
                    parameters.setEndpointIdentificationAlgorithm("HTTPS");
                    socket.setSSLParameters(parameters);
                }
                socket.startHandshake();
            }
            return null;
        } catch (SSLException error) {
            return refusal(error);
        } catch (IOException | GeneralSecurityException | RuntimeException error) {
            return null;  // not a handshake that failed: left to the first op
        }
    }

    /** An authentication or TLS failure as an error reply (the suite stops: no verdict on the client), else null. */
    static ObjectNode refusal(Throwable error) {
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            if (cause instanceof PulsarClientException.AuthenticationException) {
                return Replies.error("AuthenticationError", "authentication failed: " + cause.getMessage());
            }
            if (cause instanceof SSLException) {
                return Replies.error("TlsError", "the TLS handshake with the broker failed: " + cause.getMessage());
            }
        }
        return null;
    }

    private static String text(JsonNode auth, String field) {
        JsonNode value = auth.path(field);
        return value.isTextual() && !value.asText().isEmpty() ? value.asText() : null;
    }
}
