package serve

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/topology"
)

func newTestService(t *testing.T, window time.Duration) *Service {
	t.Helper()
	sc, err := topology.Parse("ledger.yaml", []byte(`name: ledger
duration: 10s
workload: {entry: api, rate: 1, write_fraction: 1, idempotency_keys: true}
services:
  - name: api
    workers: 2
    service_time: {dist: constant, value: 10us}
`), nil)
	require.NoError(t, err)
	s, err := NewService(sc, "api", ServiceConfig{Epoch: time.Now(), Commits: true, LedgerWindow: window})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// TestLedgerWindowBoundsMemory checks that a service with a ledger window
// counts duplicates within it and forgets requests after two windows,
// whereas one without keeps the whole run.
func TestLedgerWindowBoundsMemory(t *testing.T) {
	const window = 40 * time.Millisecond
	s := newTestService(t, window)
	s.executed("a")
	s.executed("a")
	require.EqualValues(t, 2, s.Executions("a"))
	require.EqualValues(t, 1, s.Stats().Duplicates)
	// One rotation: "a" is in the older generation, still counted.
	time.Sleep(window + 10*time.Millisecond)
	s.executed("b")
	require.EqualValues(t, 2, s.Executions("a"))
	s.executed("a")
	require.EqualValues(t, 3, s.Executions("a"), "an execution within the window moves the request forward")
	require.EqualValues(t, 2, s.Stats().Duplicates)
	// Two quiet rotations: "a" and "b" are forgotten.
	for range 2 {
		time.Sleep(window + 10*time.Millisecond)
		s.executed("c")
	}
	require.Zero(t, s.Executions("a"))
	require.Zero(t, s.Executions("b"))
	s.lmu.Lock()
	held := len(s.execs) + len(s.oldExecs)
	s.lmu.Unlock()
	require.LessOrEqual(t, held, 2)

	whole := newTestService(t, 0)
	for _, id := range []string{"a", "b", "a"} {
		whole.executed(id)
	}
	time.Sleep(window)
	require.EqualValues(t, 2, whole.Executions("a"), "no window: the whole run is kept")
}

// TestLedgerKeepsLongIDsAsDigests checks that a client's long request ids
// do not make the ledger hold their bytes, and still count.
func TestLedgerKeepsLongIDsAsDigests(t *testing.T) {
	s := newTestService(t, 0)
	long := strings.Repeat("x", 10_000)
	s.executed(long)
	s.executed(long)
	require.EqualValues(t, 2, s.Executions(long))
	require.Zero(t, s.Executions(long[:9999]))
	for k := range s.execs {
		require.LessOrEqual(t, len(k), maxLedgerID+1)
	}
}

// TestServeRefusesMalformedHeaders checks that a malformed deadline or an
// oversized idempotency key is refused with 400, a message naming the
// header, and don't-retry, before any work.
func TestServeRefusesMalformedHeaders(t *testing.T) {
	s := newTestService(t, 0)
	for _, c := range []struct {
		header, value, want string
	}{
		{transport.HeaderDeadline, "soon", transport.HeaderDeadline + ": want a number of milliseconds"},
		{transport.HeaderDeadline, "NaN", transport.HeaderDeadline + ": want a number of milliseconds"},
		{transport.HeaderDeadline, "1e300", transport.HeaderDeadline + ": want a number of milliseconds"},
		{transport.HeaderIdempotencyKey, strings.Repeat("k", maxKeyLen+1), transport.HeaderIdempotencyKey + ": longer than 256 bytes"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/api", strings.NewReader("x"))
		r.Header.Set(transport.HeaderWrite, "1")
		r.Header.Set(c.header, c.value)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		require.Equal(t, http.StatusBadRequest, w.Code, c.value)
		require.True(t, strings.HasPrefix(w.Body.String(), c.want), "%q", w.Body.String())
		require.NotEmpty(t, w.Header().Get(transport.HeaderDontRetry))
	}
	require.Zero(t, s.Stats().Executions, "nothing executed")
	require.EqualValues(t, 4, s.Stats().All.Rejected)

	// A key of exactly the bound and a well-formed deadline are served.
	r := httptest.NewRequest(http.MethodPost, "/api", strings.NewReader("x"))
	r.Header.Set(transport.HeaderWrite, "1")
	r.Header.Set(transport.HeaderRequestID, "ok")
	r.Header.Set(transport.HeaderIdempotencyKey, strings.Repeat("k", maxKeyLen))
	r.Header.Set(transport.HeaderDeadline, "1000.5")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
}
