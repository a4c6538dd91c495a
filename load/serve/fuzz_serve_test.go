package serve

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// fuzzServeScenario is one committing service that checks deadlines and
// keeps an idempotency store, so every header it reads matters.
const fuzzServeScenario = `name: fuzz-serve
duration: 10s
workload: {entry: api, rate: 1, write_fraction: 1, idempotency_keys: true}
services:
  - name: api
    workers: 4
    queue: 4
    service_time: {dist: constant, value: 10us}
    reject_expired: true
    error_rate: 0.1
`

// FuzzServeHeaders drives an emulated service's handler with arbitrary
// stormsim headers (deadline, attempt number, request id, idempotency key,
// write and warm-up marks) and bodies. It must never panic or hang, and
// every answer must be one the load driver can classify: a status of the
// emulation's protocol, and on failure an X-Stormsim-Outcome header naming
// the outcome class. A malformed header or an oversized body is refused
// with a message naming it.
func FuzzServeHeaders(f *testing.F) {
	sc, err := topology.Parse("fuzz-serve.yaml", []byte(fuzzServeScenario), nil)
	if err != nil {
		f.Fatal(err)
	}
	svc, err := NewService(sc, "api", ServiceConfig{Epoch: time.Now(), Commits: true, URLs: map[string]string{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(svc.Close)

	f.Add("250.5", "1", "42", "key-1", true, false, []byte(`{"n":1}`))
	f.Add("0", "2", "42", "key-1", true, false, []byte(`{"n":2}`))
	f.Add("-1", "x", "", "", false, true, []byte(nil))
	f.Add("NaN", "-3", "\x00", "k\r\nX-Injected: 1", true, false, []byte("\xff"))
	f.Add("1e308", "99999999999999999999", "id", "key-2", true, true, []byte("body"))
	f.Add("-Inf", "0", "id", "key-2", true, false, []byte("other body"))
	f.Add("9223372036854775807", "1", "", "k", true, false, bytes.Repeat([]byte("a"), 4096))
	f.Add("50", "1", "long-key", strings.Repeat("k", maxKeyLen+1), true, false, []byte("x"))

	valid := map[int]bool{
		http.StatusOK: true, http.StatusConflict: true, transport.StatusInProgress: true,
		http.StatusServiceUnavailable: true, http.StatusTooManyRequests: true,
		transport.StatusExpired: true, http.StatusInternalServerError: true,
		http.StatusBadRequest: true, http.StatusRequestEntityTooLarge: true,
	}
	f.Fuzz(func(t *testing.T, deadline, attempt, id, key string, write, warm bool, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/api", bytes.NewReader(body))
		for name, v := range map[string]string{
			transport.HeaderDeadline: deadline, transport.HeaderAttempt: attempt, transport.HeaderRequestID: id, transport.HeaderIdempotencyKey: key,
		} {
			if v != "" {
				r.Header[name] = []string{v}
			}
		}
		if write {
			r.Header.Set(transport.HeaderWrite, "1")
		}
		if warm {
			r.Header.Set(transport.HeaderWarmup, "1")
		}
		w := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			svc.ServeHTTP(w, r)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("handler still running after 5s (deadline %q, attempt %q)", deadline, attempt)
		}
		if !valid[w.Code] {
			t.Fatalf("status %d is not part of the emulation's protocol", w.Code)
		}
		a := transport.ClassifyStatus(w.Code, w.Header())
		if (w.Code == http.StatusOK) != (a.Outcome == policies.OK) {
			t.Fatalf("status %d classified %v", w.Code, a.Outcome)
		}
		if w.Code != http.StatusOK {
			o := w.Header().Get(transport.HeaderOutcome)
			if _, err := policies.ParseOutcome(o); err != nil {
				t.Fatalf("status %d without a valid %s: %q", w.Code, transport.HeaderOutcome, o)
			}
		}
		// A refusal of the input says which header (or the body) was at
		// fault, and asks not to retry the same request.
		if w.Code == http.StatusBadRequest || w.Code == http.StatusRequestEntityTooLarge {
			msg := w.Body.String()
			if !strings.HasPrefix(msg, transport.HeaderDeadline+":") && !strings.HasPrefix(msg, transport.HeaderIdempotencyKey+":") && !strings.HasPrefix(msg, "request body:") {
				t.Fatalf("refusal %d does not name the input at fault: %q", w.Code, msg)
			}
			if !a.DontRetry {
				t.Fatalf("refusal %d without %s", w.Code, transport.HeaderDontRetry)
			}
		}
		if a.RetryAfter < 0 {
			t.Fatalf("negative pushback %v", a.RetryAfter)
		}
	})
}
