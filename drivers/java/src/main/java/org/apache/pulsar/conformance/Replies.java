package org.apache.pulsar.conformance;

import com.fasterxml.jackson.databind.node.ObjectNode;

/** The protocol's replies (drivers/PROTOCOL.md "Replies"): ok, fail, info, error. */
final class Replies {
    private Replies() {
    }

    static ObjectNode ok() {
        return Main.JSON.createObjectNode().put("outcome", "ok");
    }

    /** A {@code fail} (the client refused it) or {@code info} (unknown whether it happened) reply. */
    static ObjectNode failed(String outcome, String errorClass, String message) {
        ObjectNode reply = Main.JSON.createObjectNode().put("outcome", outcome);
        reply.putObject("error").put("class", errorClass).put("message", message == null ? "" : message);
        return reply;
    }

    /** The driver could not perform the request at all (not understood, unsupported, a driver bug). */
    static ObjectNode error(String errorClass, String message) {
        return failed("error", errorClass, message);
    }
}
