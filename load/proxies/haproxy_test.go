package proxies

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// haproxyCfg is the whole configuration the real HAProxy runs, and the
// file the simulator pastes as haproxy_cfg: logs on stdout with the
// server and the retries of each request (%rc), the case's backend.
func haproxyCfg(port int, s scenario, addrs []string, connect string) string {
	var servers strings.Builder
	for i, a := range addrs {
		fmt.Fprintf(&servers, "    server s%d %s%s\n", i, a, s.params)
	}
	return fmt.Sprintf(`global
    log stdout format raw local0
defaults
    mode http
    log global
    log-format "%%s %%rc %%ST %%HM"
    timeout connect %s
    timeout client 10s
    timeout server 300ms
frontend fe
    bind 127.0.0.1:%d
    default_backend app
backend app
    %s
%s`, connect, port, s.directives, servers.String())
}

// haproxyLog counts the attempts of each request in HAProxy's log: the
// retries field %rc plus the first attempt (a leading + marks a
// redispatch). A request that timed out in the queue (every server at
// its maxconn) has no server, <NOSRV>, and status 503: the proxy's own
// answer, counted in queued.
func haproxyLog(t *testing.T, path string) (requests, attempts, queued int64) {
	t.Helper()
	for _, l := range lines(t, path) {
		f := strings.Fields(l)
		if len(f) != 4 || f[3] == "<BADREQ>" {
			continue // HAProxy's notices; the start-up probe's bare connection
		}
		if f[0] == "<NOSRV>" && f[2] == "503" {
			queued++
		}
		rc, err := strconv.Atoi(strings.TrimPrefix(f[1], "+"))
		if err != nil {
			t.Fatalf("log line %q: retries field %q", l, f[1])
		}
		requests++
		attempts += int64(rc) + 1
	}
	return requests, attempts, queued
}

// TestHAProxy runs each case through a real HAProxy and the simulator.
func TestHAProxy(t *testing.T) {
	bin := binary(t, "haproxy")
	third := func(n int) int { return n / 3 } // requests round robin sends to one server of three
	cases := []struct {
		scenario
		connect string // timeout connect
	}{
		{scenario{name: "dead server: retried on it, 1 s apart (the preset)", servers: 3, dead: []int{1},
			preset: "retry: {preset: haproxy}, timeout: 300ms", attempts: func(n int) int { return n + 3*third(n) }, duplicates: never}, "1s"},
		{scenario{name: "every server dead: retries 2 is 3 attempts", servers: 3, dead: []int{0, 1, 2}, directives: "retries 2",
			attempts: func(n int) int { return 3 * n }, duplicates: never}, "50ms"},
		{scenario{name: "every server dead, option redispatch: retries go elsewhere", servers: 3, dead: []int{0, 1, 2}, directives: "option redispatch",
			attempts: func(n int) int { return 4 * n }, duplicates: never}, "50ms"},
		{scenario{name: "one server, dead: four attempts", servers: 1, dead: []int{0},
			attempts: func(n int) int { return 4 * n }, duplicates: never}, "50ms"},
		{scenario{name: "503s are not retried by default", servers: 3, fault: "error_rate: 1",
			attempts: func(n int) int { return n }, duplicates: never}, "50ms"},
		{scenario{name: "503s with retry-on 503, POST too", servers: 3, fault: "error_rate: 1", directives: "retry-on 503", method: "POST",
			attempts: func(n int) int { return 4 * n }, duplicates: never}, "50ms"},
		// Each attempt times out at 300 ms (timeout server) and the
		// server answers it 1.3 s after it was sent: HAProxy retries
		// every attempt as long as its timer fires less than 1 s late
		// (with 600 ms latency the margin was 300 ms).
		{scenario{name: "slow servers, retry-on response-timeout: POST duplicated", servers: 3, fault: "latency_add: 1300ms",
			directives: "retry-on conn-failure response-timeout", method: "POST",
			attempts: func(n int) int { return 4 * n }, duplicates: func(n int) int { return 3 * n }}, "50ms"},
		{scenario{name: "slow servers, disable-l7-retry for POST", servers: 3, fault: "latency_add: 600ms",
			directives: "retry-on conn-failure response-timeout\n    http-request disable-l7-retry if METH_POST", method: "POST",
			attempts: func(n int) int { return n }, duplicates: never}, "50ms"},
		{scenario{name: "slow servers, GET, default retry-on: no retry", servers: 3, fault: "latency_add: 600ms",
			attempts: func(n int) int { return n }, duplicates: never}, "50ms"},
		// maxconn 1: the first request to each server holds its slot
		// for the latency (1.5 s), every later one waits in the queue
		// for 50 ms and is answered 503. The last request arrives at
		// 367 ms (12 at 30/s), so its queue wait ends at 417 ms, and the
		// first slot frees at 1501 ms: the count of 503s is n - servers
		// as long as a request is sent, or HAProxy's queue timer fires,
		// less than 1084 ms late. The slots' own requests succeed while
		// timeout server (3 s) fires more than 1.5 s after their
		// answers are due. (With 500 ms latency the margin was 84 ms,
		// and under two CPU burners a queued request got a freed slot.)
		{scenario{name: "maxconn 1, slow servers: beyond a slot, 503 after timeout queue, never sent", servers: 3, fault: "latency_add: 1500ms",
			directives: "timeout server 3s\n    timeout queue 50ms", params: " maxconn 1",
			attempts: func(n int) int { return n }, duplicates: never, failed: func(n int) int { return n - 3 }}, "50ms"},
		{scenario{name: "maxconn 1, retry-on 503: the queue's 503s", servers: 3, fault: "latency_add: 1500ms",
			directives: "timeout server 3s\n    timeout queue 50ms\n    retry-on conn-failure 503", params: " maxconn 1",
			attempts: func(n int) int { return n }, duplicates: never, failed: func(n int) int { return n - 3 }}, "50ms"},
		{scenario{name: "maxconn 1, timeout queue unset: timeout connect's", servers: 1, fault: "latency_add: 1500ms",
			directives: "timeout server 3s", params: " maxconn 1",
			attempts: func(n int) int { return n }, duplicates: never, failed: func(n int) int { return n - 1 }}, "50ms"},
	}
	for _, c := range cases {
		s := c.scenario
		t.Run(s.name, func(t *testing.T) {
			r := newProxyRun(t, s)
			port := freePort(t)
			cfg := filepath.Join(r.dir, "haproxy.cfg")
			if err := os.WriteFile(cfg, []byte(haproxyCfg(port, s, r.addrs, c.connect)), 0o644); err != nil {
				t.Fatal(err)
			}
			logPath := filepath.Join(r.dir, "haproxy.log")
			logFile, err := os.Create(logPath)
			if err != nil {
				t.Fatal(err)
			}
			defer logFile.Close()
			cmd := exec.Command(bin, "-db", "-f", cfg)
			cmd.Stdout = logFile
			startProxy(t, cmd, port)
			res := r.drive(port)
			var real outcome
			real.offered, real.failed = res.Summary.Requests.Offered, res.Summary.Requests.Failed
			awaitLog(real.offered, func() int64 { n, _, _ := haproxyLog(t, logPath); return n })
			var logged, queued int64
			logged, real.attempts, queued = haproxyLog(t, logPath)
			if logged != real.offered {
				t.Errorf("HAProxy logged %d requests, %d were offered", logged, real.offered)
			}
			if s.failed != nil && queued != int64(s.failed(int(real.offered))) {
				t.Errorf("HAProxy logged %d 503s from its queue, theory %d", queued, s.failed(int(real.offered)))
			}
			// Without dead servers, every attempt logged reached one,
			// but for the requests answered from the queue (<NOSRV>),
			// which the log counts as one attempt each and no server saw.
			var reached int64
			if len(s.dead) == 0 {
				reached = real.attempts - queued
			}
			real.perServer, real.duplicates = r.served(reached)
			call := s.preset
			if call == "" {
				call = "haproxy_cfg: haproxy.cfg"
			}
			compare(t, s, real, simulate(t, r.dir, s, call), nil)
		})
	}
}
