package proxies

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// nginxConf is the whole nginx.conf the real nginx runs, and the file the
// simulator pastes as nginx_conf: one process (so round robin is one
// sequence), logs in dir, the upstream's servers, the case's directives.
func nginxConf(dir string, port int, s scenario, addrs []string) string {
	var servers strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&servers, "        server %s%s;\n", a, s.params)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n" // temp paths live in the test's own directory
	}
	return fmt.Sprintf(`%sdaemon off;
master_process off;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log info;
events { worker_connections 256; }
http {
    log_format up '$upstream_addr|$upstream_status|$request_method|$status';
    access_log %[2]s/access.log up;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    upstream app {
%[3]s        %[4]s
    }
    server {
        listen 127.0.0.1:%[5]d;
        location / {
            proxy_pass http://app;
            proxy_read_timeout 300ms;
            %[6]s
        }
    }
}
`, user, dir, servers.String(), s.upstream, port, s.directives)
}

// nginxLog counts the attempts of each request in nginx's access log:
// $upstream_addr lists every server tried ("a, b : c" across upstreams),
// $upstream_status the status of each (502 for a refused connect, 504
// for a read timeout).
func nginxLog(t *testing.T, path string, addrs []string) (attempts int64, perServer []int64) {
	t.Helper()
	perServer = make([]int64, len(addrs))
	for _, l := range lines(t, path) {
		fields := strings.Split(l, "|")
		if len(fields) != 4 {
			t.Fatalf("access log line %q: want 4 fields", l)
		}
		split := func(f string) []string { return strings.Split(strings.ReplaceAll(f, " : ", ", "), ",") }
		if a, st := split(fields[0]), split(fields[1]); len(a) != len(st) {
			t.Fatalf("access log line %q: %d servers tried but %d statuses", l, len(a), len(st))
		}
		for _, a := range split(fields[0]) {
			a = strings.TrimSpace(a)
			attempts++
			for i, x := range addrs {
				if a == x {
					perServer[i]++
				}
			}
		}
	}
	return attempts, perServer
}

func never(int) int { return 0 }

// TestNginx runs each case through a real nginx and the simulator.
func TestNginx(t *testing.T) {
	bin := binary(t, "nginx")
	preset := "retry: {preset: nginx}, timeout: 300ms"
	cases := []scenario{
		{name: "dead server: once, then marked down (max_fails=1)", servers: 3, dead: []int{1}, preset: preset,
			attempts: func(n int) int { return n + 1 }, duplicates: never},
		{name: "every server dead: each tried once (max_fails=0)", servers: 3, dead: []int{0, 1, 2}, params: " max_fails=0",
			attempts: func(n int) int { return 3 * n }, duplicates: never},
		{name: "503s are passed on by default", servers: 3, fault: "error_rate: 1", preset: preset,
			attempts: func(n int) int { return n }, duplicates: never},
		{name: "503s with http_503, tries 2", servers: 3, fault: "error_rate: 1", params: " max_fails=0",
			directives: "proxy_next_upstream error timeout http_503; proxy_next_upstream_tries 2;",
			attempts:   func(n int) int { return 2 * n }, duplicates: never},
		// Each try's read times out at 300 ms (proxy_read_timeout) and
		// the server answers it 1.3 s after it was sent: nginx passes
		// every try on as long as its timer fires less than 1 s late
		// (with 600 ms latency the margin was 300 ms).
		{name: "slow servers, GET: every server once", servers: 3, fault: "latency_add: 1300ms", params: " max_fails=0",
			attempts: func(n int) int { return 3 * n }, duplicates: never},
		// Tries fail at 300 ms and 600 ms (proxy_read_timeout). A read
		// timeout firing late past the next-upstream timeout forgoes the
		// second try: under CPU burners nginx's fired 100 ms late (400 ms)
		// and 150 ms late (450 ms). Its clock is read when a timer fires,
		// so the second try's failure is never seen before 600 ms: 560 ms
		// leaves the first 260 ms of lateness and the second 40 ms.
		{name: "slow servers, proxy_next_upstream_timeout 560ms: no third try", servers: 3, fault: "latency_add: 600ms", params: " max_fails=0",
			directives: "proxy_next_upstream_timeout 560ms;",
			attempts:   func(n int) int { return 2 * n }, duplicates: never},
		{name: "slow servers, POST: not passed on", servers: 3, fault: "latency_add: 600ms", params: " max_fails=0", method: "POST",
			attempts: func(n int) int { return n }, duplicates: never},
		// As for GET: 1 s between a try's read timeout and its answer.
		{name: "slow servers, PUT: passed on, duplicated", servers: 3, fault: "latency_add: 1300ms", params: " max_fails=0", method: "PUT",
			attempts: func(n int) int { return 3 * n }, duplicates: func(n int) int { return 2 * n }},
		{name: "lost replies, POST with non_idempotent", servers: 3, fault: "drop_response: 1", params: " max_fails=0", method: "POST",
			directives: "proxy_next_upstream error timeout non_idempotent;",
			attempts:   func(n int) int { return 3 * n }, duplicates: func(n int) int { return 2 * n }},
		{name: "one server: no retry", servers: 1, fault: "drop_response: 1", preset: preset,
			attempts: func(n int) int { return n }, duplicates: never},
		{name: "keep-alive connections, lost replies", servers: 3, fault: "drop_response: 1", params: " max_fails=0",
			upstream: "keepalive 8;", directives: "proxy_http_version 1.1; proxy_set_header Connection \"\";",
			attempts: func(n int) int { return 3 * n }, duplicates: never},
	}
	for _, s := range cases {
		t.Run(s.name, func(t *testing.T) {
			r := newProxyRun(t, s)
			port := freePort(t)
			conf := filepath.Join(r.dir, "nginx.conf")
			if err := os.WriteFile(conf, []byte(nginxConf(r.dir, port, s, r.addrs)), 0o644); err != nil {
				t.Fatal(err)
			}
			startProxy(t, exec.Command(bin, "-p", r.dir, "-c", conf), port, filepath.Join(r.dir, "error.log"))
			res := r.drive(port)
			var real outcome
			real.offered = res.Summary.Requests.Offered
			accessLog := filepath.Join(r.dir, "access.log")
			awaitLog(real.offered, func() int64 { return int64(len(lines(t, accessLog))) })
			var logPer []int64
			real.attempts, logPer = nginxLog(t, filepath.Join(r.dir, "access.log"), r.addrs)
			// The log names the server of each attempt: those to live
			// servers reached them.
			var reached int64
			for i, n := range logPer {
				if !slices.Contains(s.dead, i) {
					reached += n
				}
			}
			real.perServer, real.duplicates = r.served(reached)
			call := s.preset
			if call == "" {
				call = "nginx_conf: nginx.conf, nginx_location: " + strconv.Quote("/")
			}
			compare(t, s, real, simulate(t, r.dir, s, call), logPer)
		})
	}
}
