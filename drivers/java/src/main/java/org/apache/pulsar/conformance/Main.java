package org.apache.pulsar.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * The request loop of the Java driver (drivers/PROTOCOL.md, protocol 1): one JSON request per line
 * on stdin, one reply per line on stdout, in order. Nothing else reaches stdout: System.out is
 * pointed at stderr before the client is loaded, and the client's logs (slf4j-simple) go to stderr.
 * Neither a reply nor a line on stderr shows the hello's token ({@link Secrets}).
 * Whatever the driver's own code throws becomes an {@code error} reply, never a dead driver.
 */
public final class Main {
    static final int PROTOCOL = 1;
    static final ObjectMapper JSON = new ObjectMapper();

    private Main() {
    }

    public static void main(String[] args) throws IOException {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setErr(Secrets.redacting(new FileOutputStream(FileDescriptor.err)));
        System.setOut(System.err);
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", System.getProperty("driver.log", "warn"));
        System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
        JavaDriver driver = new JavaDriver();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode request;
            try {
                request = JSON.readTree(line);
            } catch (IOException error) {
                request = null;
            }
            ObjectNode reply;
            if (request == null || !request.isObject()) {
                reply = Replies.error("BadRequest", "not a JSON object: " + line.substring(0, Math.min(200, line.length())));
                reply.putNull("id");
            } else {
                reply = handle(driver, request);
            }
            out.println(Secrets.redact(JSON.writeValueAsString(reply)));
            out.flush();
            if (request != null && "close".equals(request.path("type").asText())) {
                break;
            }
        }
        System.exit(0);  // the client's non-daemon threads must not keep the process alive
    }

    /** A hello's reply says the protocol; one refused (credentials) is an error reply as it is. */
    private static ObjectNode withProtocol(ObjectNode reply) {
        return reply.has("outcome") ? reply : reply.put("protocol", PROTOCOL);
    }

    /** The reply to one request, its id echoed first. */
    static ObjectNode handle(JavaDriver driver, JsonNode request) {
        String type = request.path("type").asText("");
        ObjectNode reply;
        try {
            switch (type) {
                case "op" -> reply = driver.perform(request);
                case "reset" -> reply = driver.reset(request);
                case "hello" -> reply = request.path("protocol").asInt(-1) != PROTOCOL
                        ? Replies.error("ProtocolVersion", "this driver speaks protocol " + PROTOCOL + ", asked for "
                        + request.get("protocol"))
                        : withProtocol(driver.hello(request));
                case "close" -> {
                    driver.close();
                    reply = Replies.ok();
                }
                default -> reply = Replies.error("UnknownRequest",
                        "unknown request type '" + type + "' (hello, reset, op, close)");
            }
        } catch (Exception error) {  // errors are data: the suite decides what a driver's failure means
            reply = Replies.error(error.getClass().getSimpleName(), String.valueOf(error.getMessage()));
        }
        ObjectNode answer = JSON.createObjectNode();
        answer.set("id", request.get("id"));
        answer.setAll(reply);
        return answer;
    }
}
