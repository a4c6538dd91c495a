package topology

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

const goodAuditSpec = `targets: [http://127.0.0.1:8081, http://127.0.0.1:8082]
request: {method: POST, path: /orders, body: '{"sku":"sku-42","qty":{n}}', headers: {Content-Type: application/json}}
key_header: Idempotency-Key
tenant_header: X-Tenant
mismatch_status: [409, 422]
effects:
  http: {path: '/orders?key={key}&tenant={tenant}', count: '$.count'}
checks: all
`

func TestParseAuditSpecDefaults(t *testing.T) {
	s, err := ParseAuditSpec("audit.yaml", []byte(goodAuditSpec))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Checks, AuditChecks) {
		t.Errorf("checks = %v, want all: %v", s.Checks, AuditChecks)
	}
	if got := s.Request.Headers["Content-Type"]; got != "application/json" {
		t.Errorf("headers[Content-Type] = %q", got)
	}
	if s.Limits.Requests != 20 || s.Limits.Time != 20*time.Second || s.Timeout != 5*time.Second || s.Concurrent != 8 {
		t.Errorf("limits = %+v, timeout %v, concurrent %d: not the documented defaults", s.Limits, s.Timeout, s.Concurrent)
	}
	c := s.Amplification.Client
	if c.Timeout != 250*time.Millisecond || c.Retry.MaxAttempts != 3 || c.Retry.Backoff.Initial != 25*time.Millisecond {
		t.Errorf("amplification client = timeout %v, retry %+v: not the documented default", c.Timeout, c.Retry)
	}
	if !slices.Equal(s.Tenants, []string{"audit-a", "audit-b"}) || !slices.Equal(s.InProgressStatus, []int{409, 425}) {
		t.Errorf("tenants %v, in_progress_status %v: not the defaults", s.Tenants, s.InProgressStatus)
	}

	s, err = ParseAuditSpec("audit.yaml", []byte(goodAuditSpec+"amplification: {client: {timeout: 1s, retry: {max_attempts: 5}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Amplification.Client; c.Timeout != time.Second || c.Retry.MaxAttempts != 5 || c.Retry.Backoff.Initial != 0 {
		t.Errorf("a written client policy = timeout %v, retry %+v: want the file's, without the audit's default backoff", c.Timeout, c.Retry)
	}
}

func TestParseAuditSpecProblems(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown key", goodAuditSpec + "tenant_heder: X\n", "audit.yaml:9: tenant_heder: unknown key (did you mean tenant_header?)"},
		{"no targets", strings.Replace(goodAuditSpec, "targets: [http://127.0.0.1:8081, http://127.0.0.1:8082]", "targets: []", 1), "audit.yaml:1: targets: required"},
		{"bad target", strings.Replace(goodAuditSpec, "http://127.0.0.1:8082", "127.0.0.1:8082", 1), "audit.yaml:1: targets[1]: not a URL"},
		{"bad scheme", strings.Replace(goodAuditSpec, "http://127.0.0.1:8082", "https://127.0.0.1:8082", 1), "audit.yaml:1: targets[1]: want http://HOST:PORT"},
		{"target with path", strings.Replace(goodAuditSpec, "http://127.0.0.1:8082", "http://127.0.0.1:8082/orders", 1), "audit.yaml:1: targets[1]: a target is a base URL"},
		{"method", strings.Replace(goodAuditSpec, "method: POST", "method: po st", 1), "audit.yaml:2: request.method: want an upper-case HTTP method"},
		{"path", strings.Replace(goodAuditSpec, "path: /orders,", "path: orders,", 1), "audit.yaml:2: request.path: required: a path starting with /"},
		{"header name", strings.Replace(goodAuditSpec, "Content-Type:", "Content Type:", 1), "audit.yaml:2: request.headers.Content Type: not a valid header name"},
		{"headers not a mapping", strings.Replace(goodAuditSpec, "headers: {Content-Type: application/json}", "headers: [a]", 1), "audit.yaml:2: request.headers: expected a mapping, got a list"},
		{"status", strings.Replace(goodAuditSpec, "[409, 422]", "[409, 200]", 1), "audit.yaml:5: mismatch_status[1]: want a 4xx or 5xx status, got 200"},
		{"status not a number", strings.Replace(goodAuditSpec, "[409, 422]", "[409, x]", 1), `audit.yaml:5: mismatch_status[1]: expected an integer, got "x"`},
		{"no effects", strings.Replace(goodAuditSpec, "effects:\n  http: {path: '/orders?key={key}&tenant={tenant}', count: '$.count'}\n", "", 1), "audit.yaml:1: effects: required"},
		{"effect path without key", strings.Replace(goodAuditSpec, "key={key}&", "", 1), "audit.yaml:7: effects.http.path: want a path starting with / that holds {key}"},
		{"json path", strings.Replace(goodAuditSpec, "'$.count'", "count", 1), `audit.yaml:7: effects.http.count: want a JSON path such as $.count, got "count"`},
		{"sql db", strings.Replace(goodAuditSpec, "http: {path: '/orders?key={key}&tenant={tenant}', count: '$.count'}", "sql: {db: 'mysql://x', query: 'SELECT 1 WHERE k = :key'}", 1), "audit.yaml:7: effects.sql.db: want sqlite:///path/to/file.db or postgres://"},
		{"both effects", strings.Replace(goodAuditSpec, "checks: all", "  sql: {db: 'sqlite:///x.db', query: 'SELECT :key'}\nchecks: all", 1), "audit.yaml:7: effects: give one of http and sql"},
		{"checks word", strings.Replace(goodAuditSpec, "checks: all", "checks: some", 1), `audit.yaml:8: checks: expected all or a list of checks`},
		{"check name", strings.Replace(goodAuditSpec, "checks: all", "checks: [lost-reply, lost-replay2]", 1), `audit.yaml:8: checks[1]: unknown check "lost-replay2" (did you mean lost-reply?)`},
		{"check twice", strings.Replace(goodAuditSpec, "checks: all", "checks: [in-flight, in-flight]", 1), `audit.yaml:8: checks[1]: check "in-flight" listed twice`},
		{"limits", goodAuditSpec + "limits: {requests: 0, time: -1s}\n", "audit.yaml:9: limits.requests: must be in [1, 10000], got 0"},
		{"limits time", goodAuditSpec + "limits:\n  time: 0s\n", "audit.yaml:10: limits.time: must be > 0, got 0s"},
		{"duration", goodAuditSpec + "timeout: 5\n", `audit.yaml:9: timeout: invalid duration "5" (missing unit`},
		{"client policy", goodAuditSpec + "amplification:\n  client:\n    retry: {max_attempts: 3, backoff: {jitter: fuzzy}}\n", "audit.yaml:11: amplification.client.retry.backoff.jitter: unknown"},
		{"client query", goodAuditSpec + "amplification:\n  client:\n    query: {interval: 1s}\n", "audit.yaml:11: amplification.client.query: a call's own status queries are the simulator's only"},
		{"client network", goodAuditSpec + "amplification:\n  client:\n    timeout: 1s\n    network: {dist: constant, value: 5ms}\n", "audit.yaml:12: amplification.client.network: the simulator's modelled one-way delay"},
		{"amplification too long", goodAuditSpec + "amplification: {step: 10s}\n", "audit.yaml:9: amplification.step: 4 steps of 10s take 40s, not within limits.time 20s"},
		{"tenant equals key", strings.Replace(goodAuditSpec, "X-Tenant", "idempotency-key", 1), "audit.yaml:4: tenant_header: must differ from key_header"},
		{"not yaml", "targets: [\n", "audit.yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseAuditSpec("audit.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("error %v is not Problems", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

func TestParseProxyFaults(t *testing.T) {
	pf, err := ParseProxyFaults("faults.yaml", []byte("faults:\n  - {at: 1s, for: 10s, drop_response: 0.3, drop: hold}\n  - {latency_add: 20ms, method: POST, path: /orders}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pf.Seed != DefaultSeed || len(pf.Faults) != 2 || pf.Faults[0].Drop != DropHold || pf.Faults[1].Drop != DropClose || pf.Faults[0].DropResponse != 0.3 {
		t.Errorf("parsed %+v", pf)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"probability", "faults:\n  - {drop_response: 1.5}\n", "faults.yaml:2: faults[0].drop_response: must be in [0, 1], got 1.5"},
		{"sum", "faults:\n  - {drop_response: 0.6, error_rate: 0.6}\n", "faults.yaml:2: faults[0]: reset_before, blackhole, error_rate, reset_after and drop_response are outcomes of one draw: they sum to 1.2"},
		{"drop mode", "faults:\n  - {drop_response: 0.5, drop: linger}\n", `faults.yaml:2: faults[0].drop: unknown drop mode "linger"`},
		{"drop without drop_response", "faults:\n  -\n    error_rate: 0.1\n    drop: hold\n", "faults.yaml:4: faults[0].drop: applies to drop_response"},
		{"negative", "faults:\n  - {latency_add: -1ms}\n", "faults.yaml:2: faults[0].latency_add: must be ≥ 0, got -1ms"},
		{"unknown", "faults:\n  - {capacity: 0.5}\n", "faults.yaml:2: faults[0].capacity: unknown key"},
		{"path", "faults:\n  - {path: orders, error_rate: 1}\n", "faults.yaml:2: faults[0].path: a path prefix starts with /"},
		{"retry after alone", "faults:\n  - {retry_after: 1s}\n", "faults.yaml:2: faults[0].retry_after: applies to error_rate's 503s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseProxyFaults("faults.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

// FuzzParseAuditSpec checks that any input either parses into a spec that
// passes its own validation again, or fails with Problems that each name
// the file — never a panic.
func FuzzParseAuditSpec(f *testing.F) {
	f.Add([]byte(goodAuditSpec))
	f.Add([]byte("targets: [http://a:1]\nrequest: {path: /x}\neffects: {sql: {db: 'sqlite:///x', query: ':key'}}\nchecks: [lost-reply]\n"))
	f.Add([]byte("checks: all\nrequest: {headers: {A: b, A: c}}\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Add([]byte("request: &r {path: /x}\nx-a: *r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseAuditSpec("fuzz.yaml", data)
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("error %v is not Problems", err)
			}
			for _, p := range ps {
				if p.File != "fuzz.yaml" {
					t.Fatalf("problem %q names %q, not the file", p, p.File)
				}
			}
			return
		}
		if len(s.Targets) == 0 || len(s.Checks) == 0 || s.Limits.Requests < 1 || s.Limits.Time <= 0 {
			t.Fatalf("accepted a spec without targets, checks or limits: %+v", s)
		}
		if (s.Effects.HTTP == nil) == (s.Effects.SQL == nil) {
			t.Fatalf("accepted a spec without exactly one oracle: %+v", s.Effects)
		}
	})
}

// FuzzParseProxyFaults checks that any fault file either parses into
// faults whose outcome probabilities are valid, or fails with Problems
// naming the file.
func FuzzParseProxyFaults(f *testing.F) {
	f.Add([]byte("seed: 3\nfaults:\n  - {at: 1s, for: 2s, drop_response: 0.3, drop: hold}\n"))
	f.Add([]byte("faults: [{reset_before: 0.5, reset_after: 0.5}, {latency_add: 1ms, method: GET, path: /x}]\n"))
	f.Add([]byte("faults: [{error_rate: 0.1, retry_after: 1s}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := ParseProxyFaults("fuzz.yaml", data)
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("error %v is not Problems", err)
			}
			return
		}
		for i, fl := range pf.Faults {
			sum := fl.ResetBefore + fl.Blackhole + fl.ErrorRate + fl.ResetAfter + fl.DropResponse
			if sum > 1+1e-9 || fl.At < 0 || fl.For < 0 || fl.LatencyAdd < 0 || fl.Drop == "" {
				t.Fatalf("accepted faults[%d] = %+v", i, fl)
			}
		}
	})
}
