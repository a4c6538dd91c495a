package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMeasureTuneVerifyAgainstATarget walks the loop docs/tune.md and
// `help tune` describe against a real server on loopback: measure it with
// `load --target --out --traces`, tune its timeout from the results
// directory and from the traces, and verify the plan in the simulator.
func TestMeasureTuneVerifyAgainstATarget(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a loopback server for a second (skipped under -short, make test runs it)")
	}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// 2–6 ms: a latency to tune from, well above the driver's noise.
		time.Sleep(time.Duration(2+n.Add(1)%5) * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	dir := t.TempDir()
	res := filepath.Join(dir, "load")
	spans := filepath.Join(dir, "spans.jsonl")
	_, errOut, code := runCLI(t, "load", "--target", srv.URL+"/orders", "--name", "orders", "--rate", "200", "--duration", "1s",
		"--out", res, "--traces", spans)
	require.Equal(t, 0, code, errOut)
	// Without --name, the target is named by its host:port.
	bare := filepath.Join(dir, "bare")
	_, errOut, code = runCLI(t, "load", "--target", srv.URL+"/orders", "--rate", "100", "--duration", "500ms", "--out", bare)
	require.Equal(t, 0, code, errOut)

	plan := func(args ...string) (hops []struct {
		Name      string  `json:"name"`
		Samples   int     `json:"samples"`
		TimeoutMs float64 `json:"timeout_ms"`
	}) {
		t.Helper()
		out, errOut, code := runCLI(t, append([]string{"tune", "--deadline", "1s", "--format", "json"}, args...)...)
		require.Equal(t, 0, code, errOut)
		var doc struct {
			Plan struct {
				Hops []struct {
					Name      string  `json:"name"`
					Samples   int     `json:"samples"`
					TimeoutMs float64 `json:"timeout_ms"`
				} `json:"hops"`
			} `json:"plan"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
		return doc.Plan.Hops
	}
	for _, src := range []string{"results:" + res, "traces:" + spans, "results:" + bare + "#" + u.Host} {
		hops := plan("--hops", "orders="+src)
		require.Len(t, hops, 1, src)
		// Every attempt succeeded; the server slept 2–6 ms, so the
		// timeout at p99.9 is at least 6 ms and far below a second.
		require.GreaterOrEqual(t, hops[0].Samples, 45, src)
		require.GreaterOrEqual(t, hops[0].TimeoutMs, 6.0, src)
		require.Less(t, hops[0].TimeoutMs, 500.0, src)
	}

	// A wrong name lists the names there are.
	for src, want := range map[string]string{
		"results:" + res:  `no latency histogram for service "payments" (have: orders;`,
		"traces:" + spans: `nor client spans with peer.service "payments" (have client spans to: orders)`,
		"results:" + bare: `(have: ` + u.Host + `;`,
	} {
		_, errOut, code := runCLI(t, "tune", "--deadline", "1s", "--hops", "payments="+src)
		require.Equal(t, exitError1, code, src)
		require.Contains(t, errOut, want, src)
	}

	// The plan, verified in the simulator against a scenario of the target.
	scen := filepath.Join(dir, "orders.yaml")
	require.NoError(t, os.WriteFile(scen, []byte(`name: orders
duration: 5s
workload:
  entry: orders
  rate: 100
  client:
    timeout: 1s
services:
  - name: orders
    workers: 8
    service_time: {dist: uniform, min: 2ms, max: 6ms}
`), 0o644))
	out, errOut, code := runCLI(t, "tune", "--deadline", "1s", "--hops", "orders=results:"+res, "--verify", scen)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "verify: orders, baseline vs tuned")
	require.Contains(t, out, "orders timeout rate (predicted")
	require.Contains(t, out, ": recommended")
}
