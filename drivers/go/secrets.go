// The hello's token is a secret (drivers/PROTOCOL.md, "Credentials"): no reply and no log line on
// stderr shows it, even where the client's own messages would quote it.
package main

import (
	"bytes"
	"io"
	"sync"
)

const hidden = "***"

// secrets holds what no reply and no log line may show (the hello's token).
var secrets = struct {
	sync.RWMutex
	values []string
}{}

func hide(secret string) {
	if secret == "" {
		return
	}
	secrets.Lock()
	defer secrets.Unlock()
	secrets.values = append(secrets.values, secret)
}

func redact(text []byte) []byte {
	secrets.RLock()
	defer secrets.RUnlock()
	for _, secret := range secrets.values {
		text = bytes.ReplaceAll(text, []byte(secret), []byte(hidden))
	}
	return text
}

// redactingWriter writes whole lines, each redacted: the client's logs on stderr. The slog handler
// writes one record per Write, ending with its newline.
type redactingWriter struct {
	mutex   sync.Mutex
	out     io.Writer
	pending []byte
}

func (w *redactingWriter) Write(data []byte) (int, error) {
	w.mutex.Lock()
	defer w.mutex.Unlock()
	w.pending = append(w.pending, data...)
	if cut := bytes.LastIndexByte(w.pending, '\n'); cut >= 0 {
		if _, err := w.out.Write(redact(w.pending[:cut+1])); err != nil {
			return 0, err
		}
		w.pending = append(w.pending[:0], w.pending[cut+1:]...)
	}
	return len(data), nil
}
