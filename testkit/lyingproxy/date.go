package lyingproxy

import (
	"net/http"
	"time"
)

// dateWriter changes the Date header of an answer as its header is
// written (ShiftDate, NoDate).
type dateWriter struct {
	http.ResponseWriter
	shift time.Duration
	drop  bool
	done  bool
}

func (w *dateWriter) fix() {
	if w.done {
		return
	}
	w.done = true
	h := w.Header()
	if w.drop {
		h["Date"] = nil // net/http adds none either
		return
	}
	t := time.Now()
	if d, err := http.ParseTime(h.Get("Date")); err == nil {
		t = d
	}
	h.Set("Date", t.Add(w.shift).UTC().Format(http.TimeFormat))
}

func (w *dateWriter) WriteHeader(status int) {
	w.fix()
	w.ResponseWriter.WriteHeader(status)
}

func (w *dateWriter) Write(b []byte) (int, error) {
	w.fix()
	return w.ResponseWriter.Write(b)
}

// Flush keeps the answer streamed, as the server's writer does.
func (w *dateWriter) Flush() {
	w.fix()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
