package paste

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/policies"
)

func TestNginxConf(t *testing.T) {
	data := readTestdata(t, "nginx.conf")
	nginxRetry := func(attempts int, on []policies.RetryClass, window time.Duration) policies.RetryConfig {
		return policies.RetryConfig{MaxAttempts: attempts, On: on, EachServerOnce: true, RetryWindow: window,
			Backoff: policies.BackoffConfig{Multiplier: 2}}
	}
	tests := []struct {
		name, location, upstream string
		want                     Policies
	}{
		{"the location's own directives over http's", "/orders/", "", Policies{Retried: true,
			Retry:   nginxRetry(2, []policies.RetryClass{"unavailable", "timeout", "not_sent"}, 1500*time.Millisecond),
			Timeout: 2 * time.Second, ConnectTimeout: 250 * time.Millisecond, HoldMethods: []string{}, Servers: 3, Balance: "least_request",
			Outlier: &Outlier{ConsecutiveFailures: 2, Interval: time.Second, BaseEjectionTime: 5 * time.Second, MaxEjectionTime: 5 * time.Second, MaxEjectionPercent: 100}}},
		{"nginx's defaults for a one-address location", "/legacy", "", Policies{Retried: true,
			Retry:   nginxRetry(0, []policies.RetryClass{"timeout", "not_sent"}, 0),
			Timeout: 2 * time.Second, HoldMethods: []string{"POST", "LOCK", "PATCH"}, Servers: 1}},
		{"an upstream with http's directives", "", "orders", Policies{Retried: true,
			Retry:   nginxRetry(0, []policies.RetryClass{"timeout", "not_sent"}, 0),
			Timeout: 2 * time.Second, HoldMethods: []string{"POST", "LOCK", "PATCH"}, Servers: 3, Balance: "least_request",
			Outlier: &Outlier{ConsecutiveFailures: 2, Interval: time.Second, BaseEjectionTime: 5 * time.Second, MaxEjectionTime: 5 * time.Second, MaxEjectionPercent: 100}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NginxConf("nginx.conf", data, tt.location, tt.upstream)
			require.NoError(t, err)
			require.NotEmpty(t, got.Note)
			got.Note = ""
			// classes() sorts by outcome; compare as sets via the built edge.
			require.ElementsMatch(t, tt.want.Retry.On, got.Retry.On)
			got.Retry.On, tt.want.Retry.On = nil, nil
			require.Equal(t, tt.want, got)
		})
	}
	p, err := NginxConf("nginx.conf", data, "/orders/", "")
	require.NoError(t, err)
	require.Equal(t, "nginx.conf: location /orders/: read proxy_connect_timeout, proxy_next_upstream, proxy_next_upstream_timeout, "+
		"proxy_next_upstream_tries, proxy_pass, proxy_read_timeout, upstream.keepalive, upstream.least_conn, upstream.server; "+
		"not modelled, ignored: events, listen, log_format, proxy_http_version, proxy_set_header, sendfile, server_name, user, worker_processes", p.Note)
}

func TestHAProxyCfg(t *testing.T) {
	data := readTestdata(t, "haproxy.cfg")
	got, err := HAProxyCfg("haproxy.cfg", data, "orders")
	require.NoError(t, err)
	require.ElementsMatch(t, []policies.RetryClass{"not_sent", "unavailable", "timeout"}, got.Retry.On)
	got.Retry.On = nil
	require.Equal(t, Policies{Retried: true, Retry: policies.RetryConfig{MaxAttempts: 3, SameServer: true, TurnAround: 300 * time.Millisecond,
		Backoff: policies.BackoffConfig{Multiplier: 2}}, Timeout: 2 * time.Second, ConnectTimeout: 300 * time.Millisecond,
		Balance: "round_robin", Servers: 3, HoldMethods: []string{"POST", "PATCH"},
		Note: "haproxy.cfg: backend orders: read balance, http-request disable-l7-retry, retries, retry-on, server, timeout connect, timeout server; " +
			"not modelled, ignored: backend section, frontend section, global section, log, mode, option httplog, timeout client"}, got)

	// leastconn keeps option redispatch's default interval: the last retry.
	got, err = HAProxyCfg("haproxy.cfg", data, "carts")
	require.NoError(t, err)
	require.Equal(t, policies.RetryConfig{MaxAttempts: 4, On: []policies.RetryClass{"not_sent"}, SameServer: true, Redispatch: -1,
		TurnAround: 300 * time.Millisecond, Backoff: policies.BackoffConfig{Multiplier: 2}}, got.Retry)
	require.Equal(t, "least_request", got.Balance)
	require.Contains(t, got.Note, "server.check")

	// HAProxy's own defaults: retries 3, conn-failure, a 1 s turn-around.
	got, err = HAProxyCfg("h.cfg", []byte("backend b\n  server s1 127.0.0.1:1\n  server s2 127.0.0.1:2\n  option redispatch\n"), "")
	require.NoError(t, err)
	require.Equal(t, policies.RetryConfig{MaxAttempts: 4, On: []policies.RetryClass{"not_sent"}, SameServer: true, Redispatch: 1,
		TurnAround: time.Second, Backoff: policies.BackoffConfig{Multiplier: 2}}, got.Retry, "roundrobin with 2 servers redispatches every retry")
}

// TestHAProxyMaxConn: the servers' maxconn is a pool of that size per
// replica whose wait is bounded by timeout queue, or by timeout connect
// when timeout queue is unset (HAProxy's fallback); no maxconn is no limit.
func TestHAProxyMaxConn(t *testing.T) {
	for _, tc := range []struct {
		name, cfg string
		maxconn   int
		queue     time.Duration
		note      string
	}{
		{"timeout queue", "defaults\n  timeout connect 1s\n  timeout queue 50ms\nbackend b\n  server s1 1.2.3.4:80 maxconn 1\n  server s2 1.2.3.4:81 maxconn 1\n",
			1, 50 * time.Millisecond, "read server, server.maxconn, timeout connect, timeout queue"},
		{"timeout queue unset: timeout connect's", "backend b\n  timeout connect 300ms\n  server s1 1.2.3.4:80 maxconn 4\n",
			4, 300 * time.Millisecond, "read server, server.maxconn, timeout connect"},
		{"default-server maxconn, one server overriding to the same", "backend b\n  default-server maxconn 2\n  server s1 1.2.3.4:80\n  server s2 1.2.3.4:81 maxconn 2\n",
			2, 0, "read server, server.maxconn"},
		{"no maxconn: no limit, timeout queue has no effect", "backend b\n  timeout queue 50ms\n  server s1 1.2.3.4:80\n",
			0, 0, "ignored: timeout queue (no server maxconn)"},
		{"maxconn 0 is no limit", "backend b\n  timeout queue 50ms\n  server s1 1.2.3.4:80 maxconn 0\n",
			0, 0, "ignored: timeout queue (no server maxconn)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := HAProxyCfg("h.cfg", []byte(tc.cfg), "b")
			require.NoError(t, err)
			require.Equal(t, tc.maxconn, p.MaxConn)
			require.Equal(t, tc.queue, p.QueueTimeout)
			require.Contains(t, p.Note, tc.note)
		})
	}
}

// TestProxyConfProblems: bad or unsupported directives are problems with
// the file's line, and never quote what the reader did not understand.
func TestProxyConfProblems(t *testing.T) {
	nginx := func(body string) string {
		return "http {\n upstream u { server a:1; server b:2; }\n server {\n  location / {\n   proxy_pass http://u;\n" + body + "  }\n }\n}\n"
	}
	tests := []struct {
		name, kind, src, sel, want string
	}{
		{"unknown condition", "nginx", nginx("   proxy_next_upstream error secret_token;\n"), "/", "n.conf:6: proxy_next_upstream: an unknown condition"},
		{"bad tries", "nginx", nginx("   proxy_next_upstream_tries many;\n"), "/", "n.conf:6: proxy_next_upstream_tries: want a number"},
		{"bad time", "nginx", nginx("   proxy_read_timeout soon;\n"), "/", "n.conf:6: proxy_read_timeout: want one nginx time"},
		{"include", "nginx", nginx("   include /etc/nginx/proxy.conf;\n"), "/", "n.conf:6: include: not supported: not followed"},
		{"missing semicolon", "nginx", "http {\n server {\n  listen 80\n }\n}\n", "", "n.conf:3: listen: want ';' before '}'"},
		{"unclosed block", "nginx", "http {\n server {\n", "", "n.conf:3: server: unexpected end of file: the block opened at line 2"},
		{"hash", "nginx", "upstream u { hash $key; server a:1; }\nserver { location / { proxy_pass http://u; } }\n", "/", "n.conf:1: upstream.hash: not supported"},
		{"weights", "nginx", "upstream u { server a:1 weight=5; server b:1; }\nserver { location / { proxy_pass http://u; } }\n", "/", "n.conf:1: server.weight: not supported"},
		{"no such location", "nginx", nginx(""), "/nope", "n.conf: location: no location"},
		{"differing maxconn", "haproxy", "backend b\n  server s1 1.2.3.4:80 maxconn 10\n  server s2 1.2.3.4:81 maxconn 20\n", "b",
			"h.cfg:3: server.maxconn: 20, but the server at line 2 has 10"},
		{"maxconn on some servers only", "haproxy", "backend b\n  server s1 1.2.3.4:80 maxconn 10\n  server s2 1.2.3.4:81\n", "b",
			"h.cfg:3: server.maxconn: 0, but the server at line 2 has 10"},
		{"bad maxconn", "haproxy", "backend b\n  server s1 1.2.3.4:80 maxconn many\n", "b", "h.cfg:2: server.maxconn: want a number"},
		{"maxqueue", "haproxy", "backend b\n  server s1 1.2.3.4:80 maxconn 10 maxqueue 5\n", "b", "h.cfg:2: server.maxqueue: not supported"},
		{"abortonclose", "haproxy", "backend b\n  option abortonclose\n  server s 1:1\n", "b", "h.cfg:2: option abortonclose: not supported"},
		{"bad retries", "haproxy", "backend b\n  retries lots\n", "b", "h.cfg:2: retries: want a number"},
		{"unknown retry-on", "haproxy", "backend b\n  retry-on conn-failure secret_token\n", "b", "h.cfg:2: retry-on: an unknown keyword"},
		{"balance by key", "haproxy", "backend b\n  balance source\n", "b", "h.cfg:2: balance: not supported"},
		{"acl condition", "haproxy", "backend b\n  http-request disable-l7-retry if secret_token\n", "b", "h.cfg:2: http-request disable-l7-retry: only"},
		{"keyword outside", "haproxy", "retries 3\nbackend b\n", "b", "h.cfg:1: a keyword before any section"},
		{"two backends", "haproxy", "backend a\nbackend b\n", "", "h.cfg: 2 backend or listen sections"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.kind == "nginx" {
				_, err = NginxConf("n.conf", []byte(tt.src), tt.sel, "")
			} else {
				_, err = HAProxyCfg("h.cfg", []byte(tt.src), tt.sel)
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			require.NotContains(t, err.Error(), "secret_token", "a problem quotes file content")
		})
	}
}

func FuzzProxyConf(f *testing.F) {
	for _, name := range []string{"nginx.conf", "haproxy.cfg"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "/orders/", "orders")
	}
	f.Add([]byte("upstream u { server a; }\nlocation / { proxy_pass http://u; proxy_next_upstream off; }"), "/", "")
	f.Add([]byte("backend b\n retry-on none\n option redispatch -2\n"), "", "b")
	f.Fuzz(func(t *testing.T, data []byte, location, name string) {
		check := func(p Policies, err error) {
			if err != nil {
				for _, q := range err.(Problems) {
					if q.Line < 0 || q.Line > strings.Count(string(data), "\n")+1 {
						t.Fatalf("problem at line %d of a %d-line file: %v", q.Line, strings.Count(string(data), "\n")+1, q)
					}
				}
				return
			}
			if err := p.Retry.Validate(); err != nil {
				t.Fatalf("accepted retry does not validate: %v (%+v)", err, p.Retry)
			}
		}
		check(NginxConf("n.conf", data, location, ""))
		check(NginxConf("n.conf", data, "", name))
		check(HAProxyCfg("h.cfg", data, name))
		check(HAProxyCfg("h.cfg", data, ""))
	})
}
