package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/traces"
)

// TestLoadScenarioOverGRPC: the five-layer chain over gRPC has the
// simulator's arithmetic too: 3⁵ attempts at s5 per request.
func TestLoadScenarioOverGRPC(t *testing.T) {
	out, errOut, code := runCLI(t, "load", "five-layer-chain", "--protocol", "grpc", "--set", "duration=1s", "--set", "warmup=0s", "--format", "json")
	require.Equal(t, 0, code, errOut)
	var s metrics.Summary
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.NotZero(t, s.Requests.Offered)
	require.Regexp(t, `^grpc://127\.0\.0\.1:\d+/stormsim\.v1\.Emulated/Call$`, s.Load.Target)
	require.Equal(t, "s5", s.Services[4].Name)
	require.InDelta(t, 243, s.Services[4].Amplification, 1e-9)
}

// TestServeGRPCAndDriveItWithData: serve --protocol grpc prints each
// service's grpc:// URL, and load --target drives the chain's entry with
// --data encoded through server reflection (the bottom's errors off: every
// request succeeds through the five gRPC hops).
func TestServeGRPCAndDriveItWithData(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"serve", "five-layer-chain", "--protocol", "grpc", "--set", "services.s5.error_rate=0"}, &out, &errb)
	}()
	re := regexp.MustCompile(`s1 +(grpc://127\.0\.0\.1:\d+/stormsim\.v1\.Emulated/Call) +\(stats: (http://127\.0\.0\.1:\d+/stats)`)
	var target, stats string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && target == ""; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			target, stats = m[1], m[2]
		}
	}
	require.NotEmpty(t, target, "serve printed: %s %s", out.String(), errb.String())
	data := filepath.Join(t.TempDir(), "data.json")
	require.NoError(t, os.WriteFile(data, []byte(`{"order": 7}`), 0o644))
	spansFile := filepath.Join(t.TempDir(), "spans.json")
	res, errOut, code := runCLI(t, "load", "--target", target, "--data-file", data, "--rate", "50", "--duration", "200ms", "--format", "json", "--traces", spansFile)
	require.Equal(t, 0, code, errOut)
	// --traces over gRPC: a root span per request and a client span per
	// attempt, its child, at the driver.
	spans, _, err := traces.ReadFile(spansFile)
	require.NoError(t, err)
	kinds := map[traces.Kind]int{}
	for _, sp := range spans {
		require.Equal(t, edge.ClientService, sp.Service)
		if sp.ParentID == "" {
			kinds[traces.Internal]++
		} else {
			kinds[sp.Kind]++
		}
	}
	require.Equal(t, map[traces.Kind]int{traces.Internal: 10, traces.Client: 10}, kinds)
	// Each client span names the target as its peer.service, so that tune
	// reads its attempts by that name (default: the target's host:port).
	host := strings.Split(target, "/")[2]
	for _, sp := range spans {
		if sp.Kind == traces.Client {
			require.Equal(t, host, sp.Peer)
		}
	}
	_, errOut, code = runCLI(t, "tune", "--deadline", "1s", "--hops", "s1=traces:"+spansFile+"#"+host)
	require.Equal(t, 0, code, errOut)
	var s metrics.Summary
	require.NoError(t, json.Unmarshal([]byte(res), &s))
	require.EqualValues(t, 10, s.Requests.Offered)
	require.EqualValues(t, 10, s.Requests.Succeeded)
	require.EqualValues(t, 10, s.Load.Statuses["200"])
	// The port answers HTTP/1 too: s1 counted the ten gRPC attempts.
	resp, err := http.Get(stats)
	require.NoError(t, err)
	var st struct {
		Service string
		All     struct{ Attempts int64 }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	require.Equal(t, "s1", st.Service)
	require.EqualValues(t, 10, st.All.Attempts)

	_, errOut, code = runCLI(t, "load", "--target", target, "--data", `{"order": `, "--duration", "100ms")
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, "--data: data as google.protobuf.Struct")
	cancel()
	select {
	case code := <-done:
		require.Equal(t, 0, code, errb.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop after its context ended")
	}
}

func TestLoadGRPCFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--target", "grpc://127.0.0.1:1/a.B/C", "--protocol", "grpc"}, "--protocol applies to SCENARIO mode"},
		{[]string{"--target", "http://127.0.0.1:1/", "--data", "{}"}, "--data applies to grpc:// targets"},
		{[]string{"--target", "grpc://127.0.0.1:1/a.B/C", "--method", "POST"}, "names its method in the URL"},
		{[]string{"--target", "grpc://127.0.0.1:1/a.B/C", "--data", "{}", "--body", "x"}, "give one"},
		{[]string{"--target", "grpc://127.0.0.1:1/a.B", "--duration", "100ms"}, "want grpc://HOST:PORT/pkg.Service/Method"},
		{[]string{"five-layer-chain", "--protocol", "quic"}, "--protocol: want http or grpc"},
		{[]string{"five-layer-chain", "--grpc-native-retry"}, "needs --protocol grpc"},
		{[]string{"five-layer-chain", "--protoset", "x.pb"}, "--protoset applies to --target only"},
	} {
		_, errOut, code := runCLI(t, append([]string{"load"}, tc.args...)...)
		require.NotEqual(t, 0, code, tc.args)
		require.Contains(t, errOut, tc.msg, tc.args)
	}
	_, errOut, code := runCLI(t, "load", "five-layer-chain", "--protocol", "grpc", "--grpc-native-retry")
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, "workload.client.grpc_service_config: not set")
	_, errOut, code = runCLI(t, "serve", "five-layer-chain", "--protocol", "quic")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--protocol: want http or grpc")
}
