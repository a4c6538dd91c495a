package main

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/live"
	"github.com/stormsim/stormsim/metrics"
)

func TestLiveFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "five-layer-chain", "--live-speed", "10x"}, "--live-speed and --live-wait need --live ADDR"},
		{[]string{"run", "five-layer-chain", "--live-wait", "1s"}, "--live-speed and --live-wait need --live ADDR"},
		{[]string{"run", "five-layer-chain", "--live", "127.0.0.1:0", "--live-wait", "-1s"}, "--live-wait: want a duration ≥ 0"},
		{[]string{"run", "five-layer-chain", "--live", "127.0.0.1:0", "--live-speed", "fast"}, "--live-speed: want a positive speed"},
		{[]string{"run", "five-layer-chain", "--live", "0.0.0.0:0"}, "--live: live: address \"0.0.0.0:0\": not a loopback address"},
		{[]string{"run", "five-layer-chain", "--live", "localhost"}, "--live: live: address \"localhost\": want host:port"},
		{[]string{"sweep", "five-layer-chain", "--param", "workload.rate", "--values", "1", "--live", ":0"}, "not a loopback address"},
		{[]string{"sweep", "--merge", "a.csv", "--live", "127.0.0.1:0"}, "--live watches a sweep as it runs; --merge runs nothing"},
		{[]string{"capacity", "five-layer-chain", "--slo", "p99<1s", "--live", ":0"}, "not a loopback address"},
		{[]string{"compare", "five-layer-chain", "--live", ":0"}, "not a loopback address"},
		{[]string{"compare", "five-layer-chain", "--live", "127.0.0.1:0", "--shard", "0/2", "--out", "x"}, "--live shows a whole comparison: run it without --shard"},
		{[]string{"serve", "five-layer-chain", "--live", ":0"}, "not a loopback address"},
		{[]string{"load", "five-layer-chain", "--live", ":0"}, "not a loopback address"},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

// freeAddr returns a loopback address no one listens on (just now).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// watch connects to a live view as soon as it listens and returns the
// names of the events it streams until the end; data gets their data.
func watch(t *testing.T, addr string, data ...*[]string) <-chan []string {
	out := make(chan []string, 1)
	go func() {
		var events []string
		defer func() { out <- events }()
		deadline := time.Now().Add(20 * time.Second)
		var resp *http.Response
		for {
			var err error
			if resp, err = http.Get("http://" + addr + "/events"); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events = append(events, name)
			}
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && len(data) > 0 {
				*data[0] = append(*data[0], d)
			}
		}
	}()
	return out
}

// `run --live` streams every row of the run, as many as timeseries.csv
// holds, then the end; --live-wait holds the run until the viewer is
// there.
func TestRunLiveStreamsEveryRow(t *testing.T) {
	addr, dir := freeAddr(t), t.TempDir()
	got := watch(t, addr)
	_, errOut, code := runCLI(t, "run", "five-layer-chain", "--duration", "4s", "--set", "warmup=0s", "--set", "interval=500ms",
		"--live", addr, "--live-speed", "8x", "--live-wait", "20s", "--out", dir)
	require.Equal(t, 0, code, errOut)
	events := <-got
	f, err := os.Open(filepath.Join(dir, "timeseries.csv"))
	require.NoError(t, err)
	defer f.Close()
	ts, err := metrics.ReadCSV(f)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("interval ", len(ts.Rows))+"end", strings.Join(events, " "))
}

// `sweep --live` streams one point per run.
func TestSweepLiveStreamsPoints(t *testing.T) {
	addr := freeAddr(t)
	got := watch(t, addr)
	dir := t.TempDir()
	_, errOut, code := runCLI(t, "sweep", "five-layer-chain", "--param", "workload.rate", "--values", "100,200",
		"--replicas", "2", "--set", "duration=2s", "--set", "warmup=0s", "--live", addr, "--live-wait", "20s", "--out", dir)
	require.Equal(t, 0, code, errOut)
	events := <-got
	b, err := os.ReadFile(filepath.Join(dir, "sweep.csv"))
	require.NoError(t, err)
	runs := strings.Count(strings.TrimSpace(string(b)), "\n") // rows after the header
	require.GreaterOrEqual(t, runs, 4)
	require.Equal(t, strings.Repeat("point ", runs)+"end", strings.Join(events, " "))
}

// `compare --live` streams each variant's intervals under its name, as
// many as its timeseries.csv holds, and then its summary as a point,
// placed at its position in the list.
func TestCompareLiveStreamsEachVariant(t *testing.T) {
	addr, dir := freeAddr(t), t.TempDir()
	var data []string
	got := watch(t, addr, &data)
	out, errOut, code := runCLI(t, "compare", "five-layer-chain", "--set", "duration=4s", "--set", "warmup=0s", "--set", "interval=1s",
		"--live", addr, "--live-wait", "20s", "--out", dir)
	require.Equal(t, 0, code, errOut)
	events := <-got
	require.Equal(t, "end", events[len(events)-1])
	rows := map[string]int{}
	seen := map[string]float64{}
	for i, d := range data[:len(data)-1] {
		switch events[i] {
		case "interval":
			var r struct{ Run string }
			require.NoError(t, json.Unmarshal([]byte(d), &r))
			rows[r.Run]++
		case "point":
			var p live.Point
			require.NoError(t, json.Unmarshal([]byte(d), &p))
			require.Contains(t, p.Values, "amplification")
			seen[p.Series] = p.X
		default:
			t.Errorf("unexpected %s event", events[i])
		}
	}
	require.Equal(t, map[string]float64{"baseline": 1, "budget-10pct": 2}, seen, out)
	for name := range seen {
		f, err := os.Open(filepath.Join(dir, name, "timeseries.csv"))
		require.NoError(t, err)
		ts, err := metrics.ReadCSV(f)
		f.Close()
		require.NoError(t, err)
		require.Equal(t, len(ts.Rows), rows[name], "%s: interval events", name)
	}
}
