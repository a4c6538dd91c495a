package driver

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/stormsim/stormsim/load/transport"
)

// AttemptResult is one attempt as it ended, for Options.OnAttempt.
type AttemptResult struct {
	// Start is when the attempt was sent; Latency how long until its
	// answer (or its failure).
	Start   time.Time
	Latency time.Duration
	Method  string
	URL     string
	// RequestID and Number are the logical request's id and the attempt's
	// number in it (1-based).
	RequestID string
	Number    int
	// Status is the HTTP status, 0 when no answer arrived; Kind then says
	// how the transport failed.
	Status   int
	Kind     transport.ErrorKind
	BytesOut int
}

// attemptResult makes the AttemptResult of a, sent at start.
func attemptResult(a *transport.Attempt, start time.Time, took time.Duration, ans transport.Answer) AttemptResult {
	return AttemptResult{Start: start, Latency: took, Method: a.Method, URL: a.URL, RequestID: a.RequestID,
		Number: a.Number, Status: ans.Status, Kind: ans.Kind, BytesOut: len(a.Body)}
}

// VegetaWriter writes attempts as vegeta results in vegeta's JSON
// encoding (what `vegeta encode --to json` writes, and `vegeta report` and
// `stormsim tune vegeta:FILE` read): one object per line with attack, seq,
// code, timestamp, latency (ns), bytes_out, error, method and url. Every
// attempt is a result, retries and hedges included, so the latencies are
// those of single requests as vegeta measures them. bytes_in, body and
// headers are not written (the driver does not keep answers' bodies).
// It is safe for concurrent use.
type VegetaWriter struct {
	mu     sync.Mutex
	w      *bufio.Writer
	attack string
	seq    uint64
	err    error
}

// NewVegetaWriter returns a writer of results to w, each labelled attack.
func NewVegetaWriter(w io.Writer, attack string) *VegetaWriter {
	return &VegetaWriter{w: bufio.NewWriterSize(w, 64<<10), attack: attack}
}

// vegetaResult is one line, its fields in vegeta's names and order.
type vegetaResult struct {
	Attack    string    `json:"attack"`
	Seq       uint64    `json:"seq"`
	Code      int       `json:"code"`
	Timestamp time.Time `json:"timestamp"`
	Latency   int64     `json:"latency"`
	BytesOut  int       `json:"bytes_out"`
	Error     string    `json:"error"`
	Method    string    `json:"method"`
	URL       string    `json:"url"`
}

// Write writes r as the next result. vegeta's error text is the status
// line for an answer outside 2xx–3xx and the transport's failure kind when
// no answer arrived.
func (v *VegetaWriter) Write(r AttemptResult) {
	res := vegetaResult{Attack: v.attack, Code: r.Status, Timestamp: r.Start.UTC(), Latency: int64(r.Latency),
		BytesOut: r.BytesOut, Method: r.Method, URL: r.URL}
	switch {
	case r.Status == 0:
		res.Error = r.Kind.String()
	case r.Status < 200 || r.Status >= 400:
		res.Error = strconv.Itoa(r.Status) + " " + http.StatusText(r.Status)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.err != nil {
		return
	}
	res.Seq = v.seq
	v.seq++
	b, err := json.Marshal(res)
	if err == nil {
		b = append(b, '\n')
		_, err = v.w.Write(b)
	}
	v.err = err
}

// Flush writes what is buffered and returns the first error of any write.
func (v *VegetaWriter) Flush() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.err != nil {
		return v.err
	}
	return v.w.Flush()
}
