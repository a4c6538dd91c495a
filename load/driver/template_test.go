package driver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/internal/loadtest"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// arrival is what a target saw of one attempt.
type arrival struct {
	id, attempt, method, path, key, stdKey, tenant, ctype, body string
	length                                                      int64
}

// recordingTarget answers 503 to the first two attempts of every logical
// request and 200 to the third, recording every attempt it got.
func recordingTarget(t *testing.T, keyHeader string) (url string, got func() []arrival) {
	var mu sync.Mutex
	var seen []arrival
	srv := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		a := arrival{
			id: r.Header.Get(transport.HeaderRequestID), attempt: r.Header.Get(transport.HeaderAttempt), method: r.Method,
			path: r.URL.RequestURI(), key: r.Header.Get(keyHeader), tenant: r.Header.Get("X-Tenant"),
			ctype: r.Header.Get("Content-Type"), body: string(b), length: r.ContentLength,
		}
		if keyHeader != transport.HeaderIdempotencyKey {
			a.stdKey = r.Header.Get(transport.HeaderIdempotencyKey)
		}
		mu.Lock()
		seen = append(seen, a)
		mu.Unlock()
		if a.attempt != "3" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	return srv.URL, func() []arrival {
		mu.Lock()
		defer mu.Unlock()
		out := append([]arrival(nil), seen...)
		sort.Slice(out, func(i, j int) bool {
			return out[i].id+"/"+out[i].attempt < out[j].id+"/"+out[j].attempt
		})
		return out
	}
}

// runTemplate sends 3 logical requests of 3 attempts each through the
// driver with the given template and transport.
func runTemplate(t *testing.T, target string, netHTTP bool, tmpl *RequestTemplate, body string) {
	t.Helper()
	runTemplateWith(t, target, netHTTP, tmpl, body, nil)
}

// runTemplateWith is runTemplate reporting every attempt to onAttempt.
func runTemplateWith(t *testing.T, target string, netHTTP bool, tmpl *RequestTemplate, body string, onAttempt func(AttemptResult)) {
	t.Helper()
	pol := topology.Call{Timeout: 2 * time.Second, Retry: policies.RetryConfig{MaxAttempts: 3,
		Backoff: policies.BackoffConfig{Initial: time.Millisecond, Max: time.Millisecond, Multiplier: 1}}}
	res, err := Run(context.Background(), Options{
		Target: target + "/orders?x=1", Method: http.MethodPost, Body: []byte(body),
		Header: http.Header{"Content-Type": {"application/json"}}, Request: tmpl,
		IdempotencyKeys: true, // overridden by the template
		Arrivals:        loadtest.ConstantWrites(100, 1, time.Second), Duration: time.Second, MaxRequests: 3,
		Policy: pol, NetHTTP: netHTTP, Workers: 4, OnAttempt: onAttempt,
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Summary.Requests.Succeeded; s != 3 {
		t.Fatalf("succeeded %d of 3", s)
	}
}

// TestRequestTemplateOneKeyPerIntent checks what arrives at the target: the
// same key and body on every attempt of an intent, a new key per intent,
// the tenant, the custom key header and nothing under the standard one, and
// the same arrivals through net/http and the lean client.
func TestRequestTemplateOneKeyPerIntent(t *testing.T) {
	const body = `{"sku":"s-{n}","qty":{n},"key":"{key}","tenant":"{tenant}","raw":{"a":1}}`
	tmpl := &RequestTemplate{KeyHeader: "x-order-key", KeyPrefix: "run1-", Tenant: "acme"}
	var byTransport [2][]arrival
	for i, netHTTP := range []bool{false, true} {
		target, got := recordingTarget(t, "X-Order-Key")
		runTemplate(t, target, netHTTP, tmpl, body)
		byTransport[i] = got()
	}
	lean, nh := byTransport[0], byTransport[1]
	if fmt.Sprint(lean) != fmt.Sprint(nh) {
		t.Errorf("the transports sent different requests:\nlean     %v\nnet/http %v", lean, nh)
	}
	if len(lean) != 9 {
		t.Fatalf("%d attempts arrived, want 9: %v", len(lean), lean)
	}
	for _, a := range lean {
		wantBody := fmt.Sprintf(`{"sku":"s-%s","qty":%s,"key":"run1-%s","tenant":"acme","raw":{"a":1}}`, a.id, a.id, a.id)
		want := arrival{id: a.id, attempt: a.attempt, method: "POST", path: "/orders?x=1", key: "run1-" + a.id,
			tenant: "acme", ctype: "application/json", body: wantBody, length: int64(len(wantBody))}
		if a != want {
			t.Errorf("attempt %s/%s arrived as\n%+v, want\n%+v", a.id, a.attempt, a, want)
		}
	}
	keys := map[string]bool{}
	for _, a := range lean {
		keys[a.key] = true
	}
	if len(keys) != 3 {
		t.Errorf("%d distinct keys over 3 intents: %v", len(keys), keys)
	}
}

// TestRequestTemplateNoKey checks --no-key: no key under either header,
// even on writes that IdempotencyKeys would have keyed.
func TestRequestTemplateNoKey(t *testing.T) {
	for _, netHTTP := range []bool{false, true} {
		target, got := recordingTarget(t, transport.HeaderIdempotencyKey)
		runTemplate(t, target, netHTTP, &RequestTemplate{NoKey: true}, `{"n":{n},"k":"{key}"}`)
		for _, a := range got() {
			if a.key != "" || a.body != `{"n":`+a.id+`,"k":""}` {
				t.Errorf("net/http %v: attempt %s/%s: key %q body %s, want no key", netHTTP, a.id, a.attempt, a.key, a.body)
			}
		}
	}
}

// TestRequestTemplateRandomPrefix checks that without a prefix two runs use
// different keys (a service remembering keys must not replay the first run
// to the second), under the standard header.
func TestRequestTemplateRandomPrefix(t *testing.T) {
	target, got := recordingTarget(t, transport.HeaderIdempotencyKey)
	runTemplate(t, target, false, &RequestTemplate{}, `{}`)
	runTemplate(t, target, false, &RequestTemplate{}, `{}`)
	keys := map[string]int{}
	for _, a := range got() {
		if !strings.HasSuffix(a.key, "-"+a.id) {
			t.Errorf("key %q of request %s: want a prefix then the intent's number", a.key, a.id)
		}
		keys[a.key]++
	}
	if len(keys) != 6 {
		t.Errorf("%d distinct keys over 2 runs of 3 intents: %v", len(keys), keys)
	}
	for k, n := range keys {
		if n != 3 {
			t.Errorf("key %q sent %d times, want once per attempt (3)", k, n)
		}
	}
}

func TestRequestTemplateRefuses(t *testing.T) {
	for _, tc := range []struct {
		tmpl RequestTemplate
		msg  string
	}{
		{RequestTemplate{KeyHeader: "Bad Header"}, `key header "Bad Header": not a valid header name`},
		{RequestTemplate{KeyPrefix: "a\nb"}, "key prefix"},
		{RequestTemplate{Tenant: "a\r\nX-Evil: 1"}, "tenant"},
		{RequestTemplate{Tenant: "a", TenantHeader: "x:y"}, `tenant header "x:y"`},
	} {
		_, err := Run(context.Background(), Options{Target: "http://127.0.0.1:1/", Arrivals: loadtest.Constant(1, time.Second),
			Duration: time.Second, Request: &tc.tmpl})
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: %v, want %q", tc.tmpl, err, tc.msg)
		}
	}
}

func TestExpandPlaceholders(t *testing.T) {
	c := &template{tenant: "t1"}
	for _, tc := range []struct{ body, want string }{
		{"", ""},
		{"plain", "plain"},
		{"{n}", "7"},
		{`{"a":{n},"b":"{key}","c":"{tenant}"}`, `{"a":7,"b":"k-7","c":"t1"}`},
		{"{{n}}{", "{7}{"},
		{"{nope}{key", "{nope}{key"},
	} {
		c.body, c.parts = []byte(tc.body), splitPlaceholders([]byte(tc.body))
		if got := string(c.expand("7", "k-7")); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.body, got, tc.want)
		}
	}
}

// FuzzExpandPlaceholders checks the parse loses nothing: expanding every
// placeholder into its own text gives the body back.
func FuzzExpandPlaceholders(f *testing.F) {
	for _, s := range []string{"", "{n}", `{"qty":{n},"k":"{key}"}`, "{{{tenant}", "{ke{key}y}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		c := &template{tenant: "{tenant}", body: []byte(body), parts: splitPlaceholders([]byte(body))}
		if got := string(c.expand("{n}", "{key}")); got != body {
			t.Fatalf("%q expanded to %q", body, got)
		}
		if c.parts == nil && strings.Contains(body, "{n}") {
			t.Fatalf("%q: placeholder not found", body)
		}
	})
}

// TestRequestTemplateHedgesShareTheKey: a hedge is another attempt of the
// same intent, so it carries the intent's key and body too.
func TestRequestTemplateHedgesShareTheKey(t *testing.T) {
	for _, netHTTP := range []bool{false, true} {
		var mu sync.Mutex
		seen := map[string][]string{} // attempt number -> key, body
		srv := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			seen[r.Header.Get(transport.HeaderAttempt)] = []string{r.Header.Get(transport.HeaderIdempotencyKey), string(b)}
			mu.Unlock()
			if r.Header.Get(transport.HeaderAttempt) == "1" {
				time.Sleep(150 * time.Millisecond) // slow enough to be hedged
			}
		})
		pol := topology.Call{Timeout: 2 * time.Second, Hedge: &policies.HedgeConfig{Delay: 20 * time.Millisecond, MaxAttempts: 2}}
		_, err := Run(context.Background(), Options{
			Target: srv.URL, Method: http.MethodPost, Body: []byte(`{"n":{n}}`), Request: &RequestTemplate{KeyPrefix: "h-"},
			Arrivals: loadtest.Constant(10, time.Second), Duration: time.Second, MaxRequests: 1,
			Policy: pol, NetHTTP: netHTTP,
		})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if got := fmt.Sprint(seen); got != `map[1:[h-1 {"n":1}] 2:[h-1 {"n":1}]]` {
			t.Errorf("net/http %v: attempts arrived as %s, want the first and its hedge with key h-1", netHTTP, got)
		}
		mu.Unlock()
	}
}
