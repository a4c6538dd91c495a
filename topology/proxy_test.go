package topology

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProxyPresetExpansion checks the rules the nginx preset takes from
// the rest of the scenario: the cap at the callee's replicas, held writes
// by method, and nginx's passive health.
func TestProxyPresetExpansion(t *testing.T) {
	const base = `name: p
duration: 1s
workload: {entry: proxy, rate: 10, write_method: %METHOD%}
services:
  - name: proxy
    workers: 4
    service_time: {dist: constant, value: 1ms}
    calls:
      - to: app
        timeout: 100ms
        retry: %RETRY%
  - name: app
    workers: 4
    replicas: %REPLICAS%
    service_time: {dist: constant, value: 1ms}
`
	tests := []struct {
		name, method, retry, replicas string
		attempts                      int
		hold, outlier                 bool
	}{
		{"every server of three", "POST", "{preset: nginx}", "3", 3, true, true},
		{"tries capped at the servers", "POST", "{preset: nginx, max_attempts: 5}", "3", 3, true, true},
		{"tries below the servers", "POST", "{preset: nginx, max_attempts: 2}", "3", 2, true, true},
		{"one server: no retry, no passive health", "POST", "{preset: nginx}", "1", 1, true, false},
		{"PUT is passed on", "PUT", "{preset: nginx}", "3", 3, false, true},
		{"PATCH is held", "PATCH", "{preset: nginx}", "3", 3, true, true},
		{"hold_writes given wins", "PUT", "{preset: nginx, hold_writes: true}", "3", 3, true, true},
		{"non_idempotent by hand", "POST", "{preset: nginx, hold_writes: false}", "2", 2, false, true},
		{"haproxy keeps its four attempts", "POST", "{preset: haproxy}", "3", 4, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.NewReplacer("%METHOD%", tt.method, "%RETRY%", tt.retry, "%REPLICAS%", tt.replicas).Replace(base)
			sc, err := Parse("p.yaml", []byte(src), nil)
			if err != nil {
				t.Fatal(err)
			}
			c := sc.Service("proxy").Calls[0]
			if c.Retry.MaxAttempts != tt.attempts || c.Retry.HoldWrites != tt.hold {
				t.Errorf("max_attempts %d, hold_writes %v; want %d, %v", c.Retry.MaxAttempts, c.Retry.HoldWrites, tt.attempts, tt.hold)
			}
			if got := c.OutlierDetection != nil; got != tt.outlier {
				t.Fatalf("outlier detection %v, want %v", got, tt.outlier)
			}
			if od := c.OutlierDetection; od != nil && (od.ConsecutiveFailures != 1 || od.BaseEjectionTime != 10*time.Second || od.MaxEjectionTime != 10*time.Second) {
				t.Errorf("outlier detection %+v, want max_fails=1 fail_timeout=10s", *od)
			}
		})
	}
}

func TestWriteMethodValidated(t *testing.T) {
	src := "name: p\nduration: 1s\nworkload: {entry: a, rate: 1, write_method: GET}\nservices:\n  - {name: a, workers: 1, service_time: {dist: constant, value: 1ms}}\n"
	_, err := Parse("p.yaml", []byte(src), nil)
	if err == nil || !strings.Contains(err.Error(), "p.yaml:3: workload.write_method: must be one of POST, PUT, PATCH, DELETE") {
		t.Fatalf("got %v", err)
	}
}

// TestPastedProxyConfigs reads nginx_conf and haproxy_cfg onto a call:
// their keys, the servers checked against the replicas, the note, and
// problems at the pasted file's line.
func TestPastedProxyConfigs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("nginx.conf", "upstream app {\n  server 127.0.0.1:1;\n  server 127.0.0.1:2;\n  server 127.0.0.1:3;\n}\nserver {\n  listen 80;\n  location / {\n    proxy_pass http://app;\n    proxy_next_upstream error timeout http_503;\n    proxy_read_timeout 300ms;\n  }\n}\n")
	write("bad.conf", "upstream app { server 127.0.0.1:1; }\nserver { location / {\n proxy_pass http://app;\n proxy_next_upstream_tries -2;\n} }\n")
	write("haproxy.cfg", "defaults\n  timeout connect 200ms\n  timeout server 300ms\nbackend app\n  retry-on conn-failure 503\n  server a 127.0.0.1:1\n  server b 127.0.0.1:2\n  server c 127.0.0.1:3\n")
	scenario := func(replicas int, call string) string {
		return fmt.Sprintf(`name: p
duration: 1s
workload: {entry: proxy, rate: 10}
services:
  - name: proxy
    workers: 4
    service_time: {dist: constant, value: 1ms}
    calls:
      - {to: app, %s}
  - name: app
    workers: 4
    replicas: %d
    service_time: {dist: constant, value: 1ms}
`, call, replicas)
	}
	parse := func(src string) (*Scenario, error) {
		path := filepath.Join(dir, "s.yaml")
		write("s.yaml", src)
		return Load(path, nil)
	}
	sc, err := parse(scenario(3, "nginx_conf: nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	c := sc.Service("proxy").Calls[0]
	if c.Retry.MaxAttempts != 3 || !c.Retry.EachServerOnce || !c.Retry.HoldWrites || c.Timeout != 300*time.Millisecond || c.OutlierDetection == nil {
		t.Errorf("nginx_conf set %+v, timeout %v, outlier %v", c.Retry, c.Timeout, c.OutlierDetection)
	}
	if w := sc.Warnings(); len(w) == 0 || !strings.Contains(w[0], "read proxy_next_upstream, proxy_pass, proxy_read_timeout, upstream.server; not modelled, ignored: listen") {
		t.Errorf("warnings %q, want the note first", w)
	}
	sc, err = parse(scenario(3, "haproxy_cfg: haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	c = sc.Service("proxy").Calls[0]
	if c.Retry.MaxAttempts != 4 || !c.Retry.SameServer || c.Retry.TurnAround != 200*time.Millisecond || c.Timeout != 300*time.Millisecond || c.ConnectTimeout != 200*time.Millisecond {
		t.Errorf("haproxy_cfg set %+v, timeout %v, connect %v", c.Retry, c.Timeout, c.ConnectTimeout)
	}
	// Server maxconn is the pool per replica; timeout queue unset is
	// timeout connect's value.
	write("maxconn.cfg", "defaults\n  timeout connect 200ms\nbackend app\n  server a 127.0.0.1:1 maxconn 2\n  server b 127.0.0.1:2 maxconn 2\n  server c 127.0.0.1:3 maxconn 2\n")
	sc, err = parse(scenario(3, "haproxy_cfg: maxconn.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	c = sc.Service("proxy").Calls[0]
	if c.Pool == nil || c.Pool.Size != 2 || c.QueueTimeout != 200*time.Millisecond {
		t.Errorf("maxconn.cfg set pool %+v, queue_timeout %v; want size 2, 200ms", c.Pool, c.QueueTimeout)
	}
	for _, tt := range []struct{ call, want string }{
		{"haproxy_cfg: maxconn.cfg, pool: {size: 3}", "pool: set by haproxy_cfg too: keep one"},
		{"queue_timeout: 50ms", "queue_timeout: needs services[0].calls[0].pool"},
		{"queue_timeout: 50ms, pool_timeout: 10ms, pool: {size: 1}", "queue_timeout: bounds the same wait as pool_timeout"},
		{"nginx_conf: bad.conf", "bad.conf:4: services[0].calls[0].nginx_conf: proxy_next_upstream_tries: want a number of tries"},
		{"nginx_conf: nginx.conf, retry: {max_attempts: 2}", "retry: set by nginx_conf too: keep one"},
		{"nginx_conf: nginx.conf, haproxy_cfg: haproxy.cfg", "a call's retries come from one pasted config"},
		{"nginx_location: /", "nginx_conf: needed"},
	} {
		_, err := parse(scenario(3, tt.call))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.call, err, tt.want)
		}
	}
	_, err = parse(scenario(2, "haproxy_cfg: haproxy.cfg"))
	if err == nil || !strings.Contains(err.Error(), "haproxy_cfg: lists 3 servers but app has 2 replicas: set services.app.replicas to 3") {
		t.Errorf("got %v", err)
	}
}
