// The request loop of the Go driver (drivers/PROTOCOL.md, protocol 1): one JSON request per line
// on stdin, one reply per line on stdout, in order. Nothing else reaches stdout: file descriptor 1
// is pointed at stderr before the client starts, and the client's logs go to stderr. Whatever the
// driver's own code panics with becomes an `error` reply, never a dead driver. Neither a reply nor
// a log line shows the hello's token (auth.go).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
)

const protocol = 1

func main() {
	out := replyStream()
	level := slog.LevelWarn
	if os.Getenv("DRIVER_LOG") == "debug" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(&redactingWriter{out: os.Stderr}, &slog.HandlerOptions{Level: level}))
	driver := newDriver(logger)
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	for {
		line, err := in.ReadString('\n')
		if strings.TrimSpace(line) != "" {
			request, reply := decode(line)
			if request != nil {
				reply = handle(driver, request)
			}
			encoded, _ := json.Marshal(reply)
			out.Write(append(redact(encoded), '\n'))
			out.Flush()
			if request != nil && request["type"] == "close" {
				os.Exit(0) // the client's goroutines must not keep the process alive
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "driver: reading stdin: %v\n", err)
			os.Exit(2)
		}
	}
}

// replyStream is the real stdout, kept for the replies alone; descriptor 1 then points at stderr.
func replyStream() *bufio.Writer {
	fd, err := syscall.Dup(1)
	if err != nil {
		return bufio.NewWriter(os.Stdout)
	}
	stdout := os.NewFile(uintptr(fd), "replies")
	if err := syscall.Dup3(2, 1, 0); err != nil {
		fmt.Fprintf(os.Stderr, "driver: could not point stdout at stderr: %v\n", err)
	}
	return bufio.NewWriter(stdout)
}

func decode(line string) (map[string]any, map[string]any) {
	decoder := json.NewDecoder(strings.NewReader(line))
	decoder.UseNumber()
	var request map[string]any
	if err := decoder.Decode(&request); err != nil || request == nil {
		text := line
		if len(text) > 200 {
			text = text[:200]
		}
		reply := errorReply("BadRequest", fmt.Sprintf("not a JSON object: %q", text))
		reply["id"] = nil
		return nil, reply
	}
	return request, nil
}

// handle is the reply to one request, its id echoed.
func handle(driver *goDriver, request map[string]any) (reply map[string]any) {
	defer func() {
		if panicked := recover(); panicked != nil {
			reply = errorReply("Panic", fmt.Sprint(panicked))
			reply["id"] = request["id"]
		}
	}()
	switch kind, _ := request["type"].(string); kind {
	case "op":
		reply = driver.perform(request)
	case "reset":
		reply = driver.reset(request)
	case "hello":
		if intOf(request["protocol"], -1) != protocol {
			reply = errorReply("ProtocolVersion", fmt.Sprintf("this driver speaks protocol %d, asked for %v",
				protocol, request["protocol"]))
		} else {
			reply = driver.hello(request)
			if reply["outcome"] == nil { // a hello refused (credentials) is an error reply as it is
				reply["protocol"] = protocol
			}
		}
	case "close":
		driver.close()
		reply = okReply()
	default:
		reply = errorReply("UnknownRequest", fmt.Sprintf("unknown request type %q (hello, reset, op, close)", kind))
	}
	reply["id"] = request["id"]
	return reply
}

func okReply() map[string]any {
	return map[string]any{"outcome": "ok"}
}

// failed is a `fail` (the client refused it) or `info` (unknown whether it happened) reply.
func failed(outcome, class, message string) map[string]any {
	return map[string]any{"outcome": outcome, "error": map[string]any{"class": class, "message": message}}
}

// errorReply: the driver could not perform the request at all (not understood, unsupported, a driver bug).
func errorReply(class, message string) map[string]any {
	return failed("error", class, message)
}

// intOf reads a JSON number (or null) as an int.
func intOf(value any, otherwise int) int {
	switch v := value.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return int(n)
		}
	case float64:
		return int(v)
	}
	return otherwise
}
