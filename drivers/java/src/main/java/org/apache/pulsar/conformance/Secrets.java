package org.apache.pulsar.conformance;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The run's secrets (the hello's {@code auth.token}) kept out of everything the driver writes: its
 * replies, and stderr, where its own and the client's log lines go (drivers/PROTOCOL.md, "auth").
 * A client error may quote what the broker said of a token; the driver never passes it on.
 */
final class Secrets {
    static final String HIDDEN = "***";
    private static final List<String> SECRETS = new CopyOnWriteArrayList<>();

    private Secrets() {
    }

    static void hide(String secret) {
        if (secret != null && !secret.isEmpty() && !SECRETS.contains(secret)) {
            SECRETS.add(secret);
        }
    }

    static String redact(String text) {
        String shown = text;
        for (String secret : SECRETS) {
            shown = shown.replace(secret, HIDDEN);
        }
        return shown;
    }

    /** A stream that writes whole lines, each redacted (a secret split by a flush would pass). */
    static PrintStream redacting(OutputStream out) {
        return new PrintStream(new LineRedactor(out), true, StandardCharsets.UTF_8);
    }

    private static final class LineRedactor extends OutputStream {
        private final OutputStream out;
        private final ByteArrayOutputStream line = new ByteArrayOutputStream();

        LineRedactor(OutputStream out) {
            this.out = out;
        }

        @Override
        public synchronized void write(int b) throws IOException {
            line.write(b);
            if (b == '\n') {
                emit();
            }
        }

        @Override
        public synchronized void write(byte[] bytes, int offset, int length) throws IOException {
            for (int i = offset; i < offset + length; i++) {
                write(bytes[i]);
            }
        }

        @Override
        public synchronized void flush() throws IOException {
            out.flush();  // a partial line waits for its end: the secret may be in what follows
        }

        @Override
        public synchronized void close() throws IOException {
            emit();
            out.close();
        }

        private void emit() throws IOException {
            out.write(redact(line.toString(StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8));
            out.flush();
            line.reset();
        }
    }
}
