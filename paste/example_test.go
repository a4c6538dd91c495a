package paste_test

import (
	"fmt"

	"github.com/stormsim/stormsim/paste"
)

// A gRPC service config pasted as deployed: the method's retryPolicy
// becomes the edge's retry (maxAttempts capped at 5), retryThrottling its
// budget.
func ExampleGRPCServiceConfig() {
	sc := []byte(`{
	  "methodConfig": [{
	    "name": [{"service": "shop.Cart"}],
	    "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
	                    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}
	  }],
	  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
	}`)
	p, err := paste.GRPCServiceConfig("service_config.json", sc, "shop.Cart/Get")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Retry.MaxAttempts, p.Retry.On, p.Retry.Backoff.Initial, p.Retry.Backoff.Jitter)
	fmt.Println(p.Budget.Kind, p.Budget.MaxTokens, p.Budget.TokenRatio)
	// Output:
	// 4 [unavailable] 100ms proportional
	// token_bucket 10 0.1
}

// An nginx location pasted as deployed: each server of the upstream at
// most once (tries 0 is every server), the read timeout per attempt, and
// POST, LOCK and PATCH held once sent unless non_idempotent is listed.
func ExampleNginxConf() {
	conf := []byte(`
http {
    upstream orders { server 10.0.0.1:80; server 10.0.0.2:80; server 10.0.0.3:80; }
    server {
        listen 80;
        location /orders/ {
            proxy_pass http://orders;
            proxy_next_upstream error timeout http_503;
            proxy_read_timeout 2s;
        }
    }
}`)
	p, err := paste.NginxConf("nginx.conf", conf, "/orders/", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Retry.On, p.Retry.EachServerOnce, p.Retry.MaxAttempts, p.Timeout, p.Servers, p.HoldMethods)
	fmt.Println(p.Note)
	// Output:
	// [unavailable timeout not_sent] true 0 2s 3 [POST LOCK PATCH]
	// nginx.conf: location /orders/: read proxy_next_upstream, proxy_pass, proxy_read_timeout, upstream.server; not modelled, ignored: listen
}

// An HAProxy backend pasted as deployed: retries 3 is 4 attempts on the
// same server, retry-on replaces conn-failure, disable-l7-retry holds POST.
func ExampleHAProxyCfg() {
	cfg := []byte(`
defaults
    mode http
    timeout connect 5s
    timeout server 2s
backend orders
    retries 3
    retry-on conn-failure 503
    http-request disable-l7-retry if METH_POST
    server o1 10.0.0.1:80
    server o2 10.0.0.2:80
`)
	p, err := paste.HAProxyCfg("haproxy.cfg", cfg, "orders")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Retry.MaxAttempts, p.Retry.On, p.Retry.SameServer, p.Retry.TurnAround, p.Timeout, p.HoldMethods)
	// Output:
	// 4 [unavailable not_sent] true 1s 2s [POST]
}
