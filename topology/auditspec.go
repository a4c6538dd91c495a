package topology

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// AuditSpec is what `stormsim audit` checks: the instances of one service,
// the write request that must be safe to retry, the headers that carry
// its idempotency key and tenant, and the oracle that counts the effects
// per key. It is a public contract (docs/audit.md); ParseAuditSpec fills
// the defaults written on each field.
type AuditSpec struct {
	// File is the spec's file name, for messages.
	File string `yaml:"-"`
	// Targets are the base URLs of the service's instances (http://).
	Targets []string     `yaml:"targets"`
	Request AuditRequest `yaml:"request"`
	// KeyHeader carries the idempotency key (default Idempotency-Key).
	KeyHeader string `yaml:"key_header"`
	// TenantHeader carries the tenant; without it key-scope is skipped.
	// Tenants are the two tenants key-scope uses (default audit-a, audit-b;
	// every other check sends the first).
	TenantHeader string   `yaml:"tenant_header"`
	Tenants      []string `yaml:"tenants"`
	// MismatchStatus lists the statuses that refuse a key reused with
	// another payload (default 409 and 422).
	MismatchStatus []int `yaml:"mismatch_status"`
	// InProgressStatus lists the statuses that say "the key's first request
	// is still running, retry later" (default 409 and 425): an answer a
	// concurrent duplicate may get instead of the replayed result.
	InProgressStatus []int `yaml:"in_progress_status"`
	// Result is a JSON path to the resource's id in a success answer
	// ($.id), which every answer for one intent must repeat; empty: the
	// whole body must be the same.
	Result  string       `yaml:"result"`
	Effects AuditEffects `yaml:"effects"`
	// Checks lists the checks to run, or "all" (the default).
	Checks AuditCheckList `yaml:"checks"`
	// Seed drives the proxy's draws, the keys and the amplification
	// step's arrivals (default DefaultSeed).
	Seed uint64 `yaml:"seed"`
	// Limits bound every check.
	Limits AuditLimits `yaml:"limits"`
	// Timeout bounds one attempt of the audit's own requests and one
	// effect query (default 5s).
	Timeout time.Duration `yaml:"timeout"`
	// Concurrent is concurrent-first's K: requests with one new key sent at
	// once, spread over the targets (default 8).
	Concurrent int `yaml:"concurrent"`
	// Amplification configures the amplification check.
	Amplification AuditAmplification `yaml:"amplification"`
}

// AuditRequest is the write under audit. Body is a template: {n} is the
// intent's number (1, 2, ...) and {key} its idempotency key.
type AuditRequest struct {
	Method  string            `yaml:"method"` // default POST
	Path    string            `yaml:"path"`
	Body    string            `yaml:"body"`
	Headers map[string]string `yaml:"headers"`
}

// AuditEffects is the effect oracle: exactly one of HTTP and SQL.
type AuditEffects struct {
	HTTP *AuditHTTPEffect `yaml:"http"`
	SQL  *AuditSQLEffect  `yaml:"sql"`
}

// AuditHTTPEffect counts a key's effects with a GET to the first target:
// Path is a template with {key} and {tenant}; Count is a JSON path ($.a.b)
// to a number, or to a list whose length is the count.
type AuditHTTPEffect struct {
	Path  string `yaml:"path"`
	Count string `yaml:"count"`
}

// AuditSQLEffect counts a key's effects with a query that returns one
// number, with :key and :tenant bound. DB is sqlite:///path/to/file.db or
// a PostgreSQL DSN (postgres://...).
type AuditSQLEffect struct {
	DB    string `yaml:"db"`
	Query string `yaml:"query"`
}

// AuditLimits bound each check: at most Requests intents (default 20) and
// Time of wall clock (default 20s), after which the check ends with what
// it has and says so.
type AuditLimits struct {
	Requests int           `yaml:"requests"`
	Time     time.Duration `yaml:"time"`
}

// AuditAmplification is the amplification check: intents offered at Rate
// per second through Client (the scenario's client call policy; default
// timeout 250ms and 3 attempts with full-jitter backoff from 25ms) while
// the proxy adds each of Latency before forwarding, one Step (default 2s)
// each (default 0s, 100ms, 300ms, 1s). Rate defaults to 20.
type AuditAmplification struct {
	Rate    float64         `yaml:"rate"`
	Step    time.Duration   `yaml:"step"`
	Latency []time.Duration `yaml:"latency"`
	Client  Call            `yaml:"client"`
}

// The audit's checks, in the order they run and are reported.
const (
	CheckLostReply       = "lost-reply"
	CheckConcurrentFirst = "concurrent-first"
	CheckPayloadMismatch = "payload-mismatch"
	CheckInFlight        = "in-flight"
	CheckNewIntent       = "new-intent"
	CheckKeyScope        = "key-scope"
	CheckAmplification   = "amplification"
)

// AuditChecks names every check, in order.
var AuditChecks = []string{CheckLostReply, CheckConcurrentFirst, CheckPayloadMismatch, CheckInFlight, CheckNewIntent, CheckKeyScope, CheckAmplification}

// AuditCheckList is a list of check names, written as a list or as the
// one word "all".
type AuditCheckList []string

// UnmarshalText accepts "all".
func (l *AuditCheckList) UnmarshalText(text []byte) error {
	if string(text) != "all" {
		return fmt.Errorf("expected all or a list of checks (%s), got %q", strings.Join(AuditChecks, ", "), Shorten(string(text)))
	}
	*l = slices.Clone(AuditChecks)
	return nil
}

// ParseAuditSpec decodes an audit spec strictly, fills its defaults and
// validates it; problems name name, the line and the field
// ("audit.yaml:4: request.method: ...").
func ParseAuditSpec(name string, data []byte) (*AuditSpec, error) {
	file := name
	if file == "" {
		file = "audit"
	}
	s := &AuditSpec{File: name}
	v, probs := decodeDocument(file, data, s)
	if v == nil {
		return nil, probs
	}
	v.auditDefaults(s)
	v.auditSpec(s)
	if probs = append(probs, v.probs...); len(probs) > 0 {
		return nil, capProblems(file, sortProblems(file, nil, probs), v.d.more+v.more)
	}
	return s, nil
}

// auditDefaults fills the documented defaults of an audit spec.
func (v *validator) auditDefaults(s *AuditSpec) {
	if s.Request.Method == "" {
		s.Request.Method = "POST"
	}
	if s.KeyHeader == "" {
		s.KeyHeader = "Idempotency-Key"
	}
	if len(s.Tenants) == 0 && !v.given("tenants") {
		s.Tenants = []string{"audit-a", "audit-b"}
	}
	if len(s.MismatchStatus) == 0 && !v.given("mismatch_status") {
		s.MismatchStatus = []int{409, 422}
	}
	if len(s.InProgressStatus) == 0 && !v.given("in_progress_status") {
		s.InProgressStatus = []int{409, 425}
	}
	if s.Checks == nil && !v.given("checks") {
		s.Checks = slices.Clone(AuditChecks)
	}
	if s.Seed == 0 {
		s.Seed = DefaultSeed
	}
	if s.Limits.Requests == 0 && !v.given("limits.requests") {
		s.Limits.Requests = 20
	}
	if s.Limits.Time == 0 && !v.given("limits.time") {
		s.Limits.Time = 20 * time.Second
	}
	if s.Timeout == 0 && !v.given("timeout") {
		s.Timeout = 5 * time.Second
	}
	if s.Concurrent == 0 && !v.given("concurrent") {
		s.Concurrent = 8
	}
	a := &s.Amplification
	if a.Rate == 0 && !v.given("amplification.rate") {
		a.Rate = 20
	}
	if a.Step == 0 && !v.given("amplification.step") {
		a.Step = 2 * time.Second
	}
	if len(a.Latency) == 0 && !v.given("amplification.latency") {
		a.Latency = []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, time.Second}
	}
	const cp = "amplification.client"
	if a.Client.Timeout == 0 && !v.given(cp+".timeout") {
		a.Client.Timeout = 250 * time.Millisecond
	}
	if !v.givenUnder(cp + ".retry") {
		a.Client.Retry = policies.RetryConfig{MaxAttempts: 3, Backoff: policies.BackoffConfig{Initial: 25 * time.Millisecond, Multiplier: 2, Max: time.Second, Jitter: "full"}}
	}
	v.callDefaults(&a.Client, cp)
}

// auditSpec validates a defaulted audit spec.
func (v *validator) auditSpec(s *AuditSpec) {
	if len(s.Targets) == 0 {
		v.add("targets", "required: the base URL of at least one instance, e.g. [http://127.0.0.1:8081]")
	}
	for i, t := range s.Targets {
		p := fmt.Sprintf("targets[%d]", i)
		u, err := url.Parse(t)
		switch {
		case err != nil:
			v.add(p, "not a URL: %v", err)
		case u.Scheme != "http" || u.Host == "":
			v.add(p, "want http://HOST:PORT, got %q", Shorten(t))
		case u.Path != "" && u.Path != "/" || u.RawQuery != "":
			v.add(p, "a target is a base URL without path or query (the path is request.path), got %q", Shorten(t))
		}
	}
	r := &s.Request
	if !validToken(r.Method) || strings.ToUpper(r.Method) != r.Method {
		v.add("request.method", "want an upper-case HTTP method such as POST, got %q", Shorten(r.Method))
	}
	if !strings.HasPrefix(r.Path, "/") {
		v.add("request.path", "required: a path starting with /, got %q", Shorten(r.Path))
	}
	for k := range r.Headers {
		if !validToken(k) {
			v.add("request.headers."+Shorten(k), "not a valid header name")
		}
	}
	for _, h := range []struct{ key, name string }{{"key_header", s.KeyHeader}, {"tenant_header", s.TenantHeader}} {
		if h.name != "" && !validToken(h.name) {
			v.add(h.key, "not a valid header name: %q", Shorten(h.name))
		}
	}
	if s.TenantHeader != "" && strings.EqualFold(s.TenantHeader, s.KeyHeader) {
		v.add("tenant_header", "must differ from key_header")
	}
	if len(s.Tenants) != 2 || s.Tenants[0] == "" || s.Tenants[0] == s.Tenants[1] {
		v.add("tenants", "want two different tenant names, got %q", s.Tenants)
	}
	v.statuses("mismatch_status", s.MismatchStatus)
	v.statuses("in_progress_status", s.InProgressStatus)
	v.effects(&s.Effects)
	if s.Result != "" {
		if _, err := ParseJSONPath(s.Result); err != nil {
			v.add("result", "%v", err)
		}
	}
	seen := map[string]bool{}
	for i, c := range s.Checks {
		p := fmt.Sprintf("checks[%d]", i)
		switch {
		case !slices.Contains(AuditChecks, c):
			if sg := suggest(c, AuditChecks); sg != "" {
				v.add(p, "unknown check %q (did you mean %s?)", Shorten(c), sg)
			} else {
				v.add(p, "unknown check %q (checks: %s)", Shorten(c), strings.Join(AuditChecks, ", "))
			}
		case seen[c]:
			v.add(p, "check %q listed twice", c)
		}
		seen[c] = true
	}
	if v.given("checks") && len(s.Checks) == 0 {
		v.add("checks", "lists no check (write all, or the checks to run)")
	}
	if s.Limits.Requests < 1 || s.Limits.Requests > 10000 {
		v.add("limits.requests", "must be in [1, 10000], got %d", s.Limits.Requests)
	}
	v.positive("limits.time", s.Limits.Time)
	v.positive("timeout", s.Timeout)
	if s.Concurrent < 2 || s.Concurrent > 256 {
		v.add("concurrent", "must be in [2, 256], got %d", s.Concurrent)
	}
	a := &s.Amplification
	if a.Rate <= 0 || a.Rate > 10000 {
		v.add("amplification.rate", "must be in (0, 10000] requests per second, got %v", a.Rate)
	}
	v.positive("amplification.step", a.Step)
	if len(a.Latency) == 0 {
		v.add("amplification.latency", "lists no step")
	}
	for i, d := range a.Latency {
		v.nonNegative(fmt.Sprintf("amplification.latency[%d]", i), d)
	}
	if run := time.Duration(len(a.Latency)) * a.Step; slices.Contains(s.Checks, CheckAmplification) && a.Step > 0 && run >= s.Limits.Time {
		v.add("amplification.step", "%d steps of %v take %v, not within limits.time %v: shorten the steps or raise the limit", len(a.Latency), a.Step, run, s.Limits.Time)
	}
	const cp = "amplification.client"
	if a.Client.To != "" || len(a.Client.Parallel) > 0 || a.Client.Fanout > 1 || a.Client.WaitFor != 0 {
		v.add(cp+".to", "a client policy calls its one target: to, parallel, fanout and wait_for do not apply")
	}
	v.realClient(&a.Client, cp)
	v.callPolicies(&a.Client, cp, len(s.Targets))
}

// statuses checks a list of HTTP statuses.
func (v *validator) statuses(p string, codes []int) {
	if len(codes) == 0 {
		v.add(p, "lists no status")
	}
	for i, c := range codes {
		if c < 400 || c > 599 {
			v.add(fmt.Sprintf("%s[%d]", p, i), "want a 4xx or 5xx status, got %d", c)
		}
	}
}

// effects checks the effect oracle: one of http and sql, complete.
func (v *validator) effects(e *AuditEffects) {
	switch {
	case e.HTTP == nil && e.SQL == nil:
		v.add("effects", "required: http {path, count} or sql {db, query}, the oracle that counts a key's effects")
	case e.HTTP != nil && e.SQL != nil:
		v.add("effects", "give one of http and sql")
	case e.HTTP != nil:
		if !strings.HasPrefix(e.HTTP.Path, "/") || !strings.Contains(e.HTTP.Path, "{key}") {
			v.add("effects.http.path", "want a path starting with / that holds {key}, got %q", Shorten(e.HTTP.Path))
		}
		if _, err := ParseJSONPath(e.HTTP.Count); err != nil {
			v.add("effects.http.count", "%v", err)
		}
	default:
		db := e.SQL.DB
		if !strings.HasPrefix(db, "sqlite://") && !strings.HasPrefix(db, "postgres://") && !strings.HasPrefix(db, "postgresql://") {
			v.add("effects.sql.db", "want sqlite:///path/to/file.db or postgres://..., got %q", Shorten(db))
		}
		if !strings.Contains(e.SQL.Query, ":key") {
			v.add("effects.sql.query", "want a query returning one number with :key (and :tenant) bound, got %q", Shorten(e.SQL.Query))
		}
	}
}

// ParseJSONPath splits a JSON path of the form $.a.b (or $ alone) into
// its keys.
func ParseJSONPath(p string) ([]string, error) {
	if p != "$" && !strings.HasPrefix(p, "$.") {
		return nil, fmt.Errorf("want a JSON path such as $.count, got %q", Shorten(p))
	}
	if p == "$" {
		return nil, nil
	}
	keys := strings.Split(p[2:], ".")
	for _, k := range keys {
		if k == "" {
			return nil, fmt.Errorf("empty key in JSON path %q", Shorten(p))
		}
	}
	return keys, nil
}

// validToken reports whether s is an HTTP token (a method or header name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
