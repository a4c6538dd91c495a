package proxies

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/serve"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// makeTarget installs the proxies for developers.
const makeTarget = "make proxy-tools"

// binary returns the path of a proxy binary, skipping the test when it is
// not installed, except under CI=true, where it must be.
func binary(t *testing.T, name string) string {
	t.Helper()
	for _, dir := range []string{"", "/usr/sbin/", "/usr/local/sbin/"} {
		if p, err := exec.LookPath(dir + name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s is not installed: run %s (Debian's nginx and haproxy packages)", name, makeTarget)
	}
	t.Skipf("%s not installed: run %s to run the differential tests against the real proxies", name, makeTarget)
	return ""
}

// freePort returns a loopback port nobody listens on (just now).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startProxy runs cmd until the test ends, and waits until it accepts
// connections on port; a process that exits or never listens fails the
// test with what it logged.
func startProxy(t *testing.T, cmd *exec.Cmd, port int, logs ...string) {
	t.Helper()
	var out bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("%s exited at start: %v\n%s%s", filepath.Base(cmd.Path), err, out.String(), readLogs(logs))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen on %s after 10s\n%s%s", filepath.Base(cmd.Path), addr, out.String(), readLogs(logs))
		}
	}
}

func readLogs(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		b.Write(data)
	}
	return b.String()
}

// scenario is one differential case: the upstream servers, what is wrong
// with them, the proxy's config and the workload.
type scenario struct {
	name    string
	servers int
	// dead lists the servers whose address is a closed port (in the
	// simulator: refuse_connections on that replica).
	dead []int
	// fault is a fault's effect on every replica (YAML flow keys):
	// "error_rate: 1" answers 503 (error_class unavailable),
	// "latency_add: 600ms" is slower than the read timeout,
	// "drop_response: 1" loses every reply.
	fault string
	// directives go into the proxy's location (nginx) or backend
	// (HAProxy); params after each nginx server; upstream into nginx's
	// upstream block.
	directives, params, upstream string
	// preset, when set, is the simulator's retry preset (with timeout
	// 300ms) instead of the pasted config file the proxy runs.
	preset string
	// method is the writes' method; "" sends reads (GET).
	method string
	// attempts and duplicates are what theory gives for n requests;
	// failed, when not nil, the requests that failed (the proxy's 503s).
	attempts, duplicates, failed func(n int) int
}

const (
	rate     = 30
	duration = 400 * time.Millisecond
)

// upstreamYAML is the scenario serve runs: the upstream servers alone.
func (s scenario) upstreamYAML() string {
	return fmt.Sprintf(`name: upstream
duration: 1s
workload: {entry: app, rate: 1}
services:
%s%s`, s.appYAML(), s.faultsYAML(false))
}

func (s scenario) appYAML() string {
	return fmt.Sprintf(`  - name: app
    workers: 64
    queue: 1000
    replicas: %d
    service_time: {dist: constant, value: 1ms}
    error_class: unavailable
`, s.servers)
}

func (s scenario) faultsYAML(dead bool) string {
	var fs []string
	if s.fault != "" {
		fs = append(fs, fmt.Sprintf("  - {service: app, at: 0s, for: 1h, %s}\n", s.fault))
	}
	if dead {
		for _, k := range s.dead {
			fs = append(fs, fmt.Sprintf("  - {service: app, at: 0s, for: 1h, replica: %d, refuse_connections: true}\n", k))
		}
	}
	if len(fs) == 0 {
		return ""
	}
	return "faults:\n" + strings.Join(fs, "")
}

// simYAML is the simulator's scenario: a proxy service whose call to the
// upstream has the preset or the pasted config.
func (s scenario) simYAML(call string) string {
	writes, method := 0.0, "POST"
	if s.method != "" {
		writes, method = 1, s.method
	}
	return fmt.Sprintf(`name: %q
duration: %v
workload: {entry: proxy, arrival: constant, rate: %d, write_fraction: %v, write_method: %s, client: {timeout: 10s}}
services:
  - name: proxy
    workers: 1000
    service_time: {dist: constant, value: 0s}
    calls:
      - {to: app, %s}
%s%s`, s.name, duration, rate, writes, method, call, s.appYAML(), s.faultsYAML(true))
}

// outcome is what one run of a case made the upstream servers see.
type outcome struct {
	offered    int64
	attempts   int64   // attempts the proxy made
	perServer  []int64 // attempts that reached each server
	duplicates int64
	failed     int64 // requests that failed
}

// proxyRun is the real run: serve's upstreams, the proxy in front, the
// load driver in front of it. write(servers, port) writes the proxy's
// config and returns its command, the config's path and the proxy log
// reader that counts attempts per request.
type proxyRun struct {
	t       *testing.T
	dir     string
	s       scenario
	addrs   []string // the proxy's servers: serve's replicas, or closed ports
	cluster *serve.Cluster
}

func newProxyRun(t *testing.T, s scenario) *proxyRun {
	t.Helper()
	up, err := topology.Parse("upstream.yaml", []byte(s.upstreamYAML()), nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := serve.StartCluster(up, serve.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = cl.Close(ctx)
	})
	urls := cl.ReplicaURLs["app"]
	if len(urls) == 0 {
		urls = []string{cl.URLs["app"]}
	}
	r := &proxyRun{t: t, dir: t.TempDir(), s: s, cluster: cl}
	for i, u := range urls {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		addr := pu.Host
		for _, k := range s.dead {
			if k == i {
				addr = "127.0.0.1:" + strconv.Itoa(freePort(t))
			}
		}
		r.addrs = append(r.addrs, addr)
	}
	return r
}

// drive sends the workload through the proxy listening on port.
func (r *proxyRun) drive(port int) *metrics.Result {
	r.t.Helper()
	writes, method := 0.0, ""
	if r.s.method != "" {
		writes, method = 1, r.s.method
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	arrivals, err := driver.TargetArrivals(topology.ArrivalConstant, rate, writes, duration, 1)
	if err != nil {
		r.t.Fatal(err)
	}
	res, err := driver.Run(ctx, driver.Options{
		Target: fmt.Sprintf("http://127.0.0.1:%d/", port), Arrivals: arrivals,
		Duration: duration, WriteMethod: method, Grace: 10 * time.Second,
		Policy: topology.Call{Timeout: 10 * time.Second},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return res
}

// served returns the attempts each server saw, by serve's own counters,
// and the duplicates its ledger counted, once the servers have counted at
// least reached attempts in all (what the proxy's log says reached them;
// 0 when the log cannot tell) and are idle, or after 5 s. Being idle is
// not enough: the proxy logs a request once it gave up on its last
// attempt, which by then was written to a server's socket, but on a busy
// machine the server's handler may not have read it yet, and an idle
// server that has not counted it yet would be read one attempt short.
func (r *proxyRun) served(reached int64) ([]int64, int64) {
	reps := r.cluster.Replicas("app")
	// Work its callers abandoned runs on (cancel_on_timeout is off): wait
	// for it to finish, as the simulator's drain does.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		idle, seen := true, int64(0)
		for _, s := range reps {
			st := s.Stats()
			idle = idle && st.Busy == 0 && st.Queue == 0
			seen += st.All.Attempts
		}
		if idle && seen >= reached {
			break
		}
	}
	out := make([]int64, len(reps))
	for i, s := range reps {
		out[i] = s.Stats().All.Attempts
	}
	return out, reps[0].Stats().Duplicates
}

// simulate runs the simulator's scenario with the call given.
func simulate(t *testing.T, dir string, s scenario, call string) outcome {
	t.Helper()
	path := filepath.Join(dir, "sim.yaml")
	if err := os.WriteFile(path, []byte(s.simYAML(call)), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := topology.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Summary
	o := outcome{offered: sum.Requests.Offered, duplicates: sum.Duplicates, failed: sum.Requests.Failed, perServer: make([]int64, s.servers)}
	for _, e := range sum.Edges {
		if e.From == "proxy" && e.To == "app" {
			o.attempts = e.Attempts
		}
	}
	for _, sv := range sum.Services {
		if sv.Name != "app" {
			continue
		}
		if len(sv.Replicas) == 0 {
			o.perServer[0] = sv.Attempts
		}
		for _, rp := range sv.Replicas {
			o.perServer[rp.Replica] = rp.Attempts
		}
	}
	return o
}

// compare checks the real run against theory and the simulator: the
// attempts the proxy made (its log), the attempts each live server saw
// (serve's counters, which the log must agree with), the duplicates.
func compare(t *testing.T, s scenario, real, simulated outcome, logPerServer []int64) {
	t.Helper()
	n := int(real.offered)
	if real.offered != simulated.offered || n == 0 {
		t.Fatalf("offered %d real, %d simulated", real.offered, simulated.offered)
	}
	want := int64(s.attempts(n))
	if real.attempts != want || simulated.attempts != want {
		t.Errorf("attempts: proxy log %d, simulator %d, theory %d (n = %d)", real.attempts, simulated.attempts, want, n)
	}
	wantDup := int64(s.duplicates(n))
	if real.duplicates != wantDup || simulated.duplicates != wantDup {
		t.Errorf("duplicates: serve %d, simulator %d, theory %d", real.duplicates, simulated.duplicates, wantDup)
	}
	if s.failed != nil {
		if want := int64(s.failed(n)); real.failed != want || simulated.failed != want {
			t.Errorf("failed requests: real %d, simulator %d, theory %d", real.failed, simulated.failed, want)
		}
	}
	var live, simLive int64
	for i := range real.perServer {
		dead := false
		for _, k := range s.dead {
			dead = dead || k == i
		}
		if dead {
			if simulated.perServer[i] != 0 || real.perServer[i] != 0 {
				t.Errorf("server %d is dead but saw %d (serve), %d (simulator)", i, real.perServer[i], simulated.perServer[i])
			}
			continue
		}
		if logPerServer != nil && logPerServer[i] != real.perServer[i] {
			t.Errorf("server %d: the proxy's log says %d attempts, serve counted %d", i, logPerServer[i], real.perServer[i])
		}
		live += real.perServer[i]
		simLive += simulated.perServer[i]
	}
	if live != simLive {
		t.Errorf("attempts reaching live servers: %d real, %d simulated", live, simLive)
	}
}

// lines returns the non-empty lines of a log file.
func lines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// awaitLog waits until count() reaches want, or 5 s pass: a proxy writes
// a request's log line after it answered, so the driver can be done with
// the run before the last lines are in the file.
func awaitLog(want int64, count func() int64) {
	deadline := time.Now().Add(5 * time.Second)
	for count() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}
