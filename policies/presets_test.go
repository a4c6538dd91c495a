package policies

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// docTable is a markdown table of docs/policies.md whose first column is
// "preset": each row maps the header keys (YAML paths such as
// backoff.initial) to cell values.
type docTable struct {
	header []string
	rows   [][]string
}

// readDocTables returns the tables of the file whose first header cell is
// "preset", keyed by the first preset-table section heading above them.
func readDocTables(t *testing.T, path string) map[string]docTable {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string]docTable{}
	var section string
	var cur *docTable
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## ") {
			section = strings.TrimPrefix(line, "## ")
		}
		if !strings.HasPrefix(line, "|") {
			if cur != nil {
				tables[section] = *cur
				cur = nil
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		switch {
		case cur == nil && cells[0] == "preset":
			cur = &docTable{header: cells}
		case cur == nil:
		case strings.HasPrefix(cells[0], "---"):
		default:
			if len(cells) != len(cur.header) {
				t.Fatalf("%s:%d: %d cells, header has %d", path, i+1, len(cells), len(cur.header))
			}
			cur.rows = append(cur.rows, cells)
		}
	}
	if cur != nil {
		tables[section] = *cur
	}
	return tables
}

// decodeRow builds the YAML of a row (dotted header keys become nested maps,
// "—" cells are left out, "source" is ignored) and decodes it strictly into out.
func decodeRow(t *testing.T, tb docTable, row []string, out any) {
	t.Helper()
	doc := map[string]any{}
	for j, key := range tb.header {
		cell := row[j]
		if j == 0 || key == "source" || cell == "—" {
			continue
		}
		var v any
		if err := yaml.Unmarshal([]byte(cell), &v); err != nil {
			t.Fatalf("preset %s: %s: %v", row[0], key, err)
		}
		m := doc
		parts := strings.Split(key, ".")
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = v
	}
	raw, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		t.Fatalf("preset %s: %v\n%s", row[0], err, raw)
	}
}

// TestPresetTablesMatchDocs keeps docs/policies.md and the presets in step:
// every documented row equals its preset and every preset is documented.
func TestPresetTablesMatchDocs(t *testing.T) {
	tables := readDocTables(t, "../docs/policies.md")
	check := func(section string, names []string, get func(string) (any, error), newOut func() any) {
		tb, ok := tables[section]
		if !ok {
			t.Fatalf("docs/policies.md: no preset table under %q", section)
		}
		var seen []string
		for _, row := range tb.rows {
			want, err := get(row[0])
			if err != nil {
				t.Errorf("%s: documented preset %q: %v", section, row[0], err)
				continue
			}
			got := newOut()
			decodeRow(t, tb, row, got)
			if g := reflect.ValueOf(got).Elem().Interface(); !reflect.DeepEqual(g, want) {
				t.Errorf("%s: preset %q\n docs: %+v\n code: %+v", section, row[0], g, want)
			}
			seen = append(seen, row[0])
		}
		slices.Sort(seen)
		if !slices.Equal(seen, names) {
			t.Errorf("%s: documented presets %v, code has %v", section, seen, names)
		}
	}
	// The proxies' presets have a table of their own, with their keys.
	proxies := []string{"haproxy", "nginx"}
	check("Retry presets", slices.DeleteFunc(RetryPresetNames(), func(n string) bool { return slices.Contains(proxies, n) }),
		func(n string) (any, error) { return RetryPreset(n) }, func() any { return new(RetryConfig) })
	check("Proxy retry presets", proxies,
		func(n string) (any, error) { return RetryPreset(n) }, func() any { return new(RetryConfig) })
	check("Retry budgets", BudgetPresetNames(),
		func(n string) (any, error) { return BudgetPreset(n) }, func() any { return new(BudgetConfig) })
	check("Circuit breakers", BreakerPresetNames(),
		func(n string) (any, error) { return BreakerPreset(n) }, func() any { return new(BreakerConfig) })
}

// TestPresetsBuild checks every preset is a valid, constructible policy.
func TestPresetsBuild(t *testing.T) {
	for _, n := range RetryPresetNames() {
		c, _ := RetryPreset(n)
		if err := c.Validate(); err != nil {
			t.Errorf("retry preset %s: %v", n, err)
		}
	}
	for _, n := range BudgetPresetNames() {
		if _, err := NewBudget(BudgetConfig{Preset: n}); err != nil {
			t.Errorf("budget preset %s: %v", n, err)
		}
	}
	for _, n := range BreakerPresetNames() {
		if _, err := NewBreaker(BreakerConfig{Preset: n}); err != nil {
			t.Errorf("breaker preset %s: %v", n, err)
		}
	}
}

func TestResolveOverrides(t *testing.T) {
	r, err := RetryConfig{Preset: "grpc", MaxAttempts: 2, Backoff: BackoffConfig{Max: 5 * time.Second}}.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxAttempts != 2 || r.Backoff.Max != 5*time.Second || r.Backoff.Initial != 100*milli ||
		r.Backoff.Jitter != "proportional" || !slices.Equal(r.On, []RetryClass{"unavailable"}) {
		t.Errorf("grpc with overrides = %+v", r)
	}
	// The preset's slice is not shared with the caller.
	r.On[0] = "timeout"
	if again, _ := RetryPreset("grpc"); again.On[0] != "unavailable" {
		t.Error("RetryPreset returned a shared slice")
	}
	b, err := BudgetConfig{Preset: "finagle", Ratio: 0.5, Scope: "service"}.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.Ratio != 0.5 || b.MinPerSec != 10 || b.Window != 10*time.Second || b.Scope != "service" || b.Kind != "ratio" {
		t.Errorf("finagle with overrides = %+v", b)
	}
	k, err := BreakerConfig{Preset: "resilience4j", WindowSize: 20, MinCalls: 10}.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if k.WindowSize != 20 || k.MinCalls != 10 || k.OpenFor != time.Minute || k.Kind != "rate" {
		t.Errorf("resilience4j with overrides = %+v", k)
	}
	for _, bad := range []error{
		func() error { _, err := (RetryConfig{Preset: "x"}).Resolve(nil); return err }(),
		func() error { _, err := (BudgetConfig{Preset: "x"}).Resolve(nil); return err }(),
		func() error { _, err := (BreakerConfig{Preset: "x"}).Resolve(nil); return err }(),
	} {
		fe, ok := errors.AsType[*FieldError](bad)
		ee, eok := errors.AsType[*EnumError](bad)
		if !ok || fe.Field != "preset" || !eok || ee.Got != "x" || !strings.Contains(bad.Error(), `preset "x"`) {
			t.Errorf("unknown preset: error %v", bad)
		}
	}
}

// TestResolveExplicitZero: a key given explicitly as zero wins over the
// preset and over the kind's default, for each preset kind, and the
// resolved config is used as it is, never expanded again.
func TestResolveExplicitZero(t *testing.T) {
	given := func(keys ...string) Given {
		return func(k string) bool { return slices.Contains(keys, k) }
	}
	r, err := RetryConfig{Preset: "grpc"}.Resolve(given("backoff.initial"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Backoff.Initial != 0 || r.MaxAttempts != 4 || r.Backoff.Max != time.Second {
		t.Errorf("grpc with backoff.initial: 0 = %+v, want initial 0, 4 attempts, max 1s", r)
	}
	if again, _ := r.Resolve(nil); again.Backoff.Initial != 0 {
		t.Errorf("a resolved retry config was expanded again: initial %v", again.Backoff.Initial)
	}

	b, err := BudgetConfig{Preset: "finagle"}.Resolve(given("min_per_sec"))
	if err != nil {
		t.Fatal(err)
	}
	if b.MinPerSec != 0 || b.Ratio != 0.2 {
		t.Errorf("finagle with min_per_sec: 0 = %+v, want 0 retries/s and ratio 0.2", b)
	}
	// Built into a budget, it admits no retry without requests: the
	// preset's 10/s is not laid back under the explicit zero.
	bud, err := NewBudget(b)
	if err != nil {
		t.Fatal(err)
	}
	if bud.TryRetry(time.Second, Unavailable) {
		t.Error("finagle with min_per_sec: 0 allowed a retry with no traffic")
	}
	q, err := BudgetConfig{Preset: "aws"}.Resolve(given("retry_cost", "throttle_cost"))
	if err != nil {
		t.Fatal(err)
	}
	if q.RetryCost != 0 || q.ThrottleCost != 0 || q.TimeoutCost != 10 {
		t.Errorf("aws with retry_cost: 0, throttle_cost: 0 = %+v", q)
	}

	k, err := BreakerConfig{Preset: "gobreaker"}.Resolve(given("open_for"))
	if err != nil {
		t.Fatal(err)
	}
	if k.OpenFor != 0 || k.Failures != 6 {
		t.Errorf("gobreaker with open_for: 0 = %+v, want open_for 0 and 6 failures", k)
	}
	if err := k.Validate(); err != nil {
		t.Errorf("open_for: 0 is valid, got %v", err)
	}
	// A zero that means nothing is an error, not the default.
	k, err = BreakerConfig{Preset: "gobreaker"}.Resolve(given("failures"))
	if err != nil {
		t.Fatal(err)
	}
	if fe, ok := errors.AsType[*FieldError](k.Validate()); !ok || fe.Field != "breaker.failures" {
		t.Errorf("failures: 0 validated as %v, want a breaker.failures error", k.Validate())
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name  string
		p     *PushbackConfig
		queue int
		want  time.Duration
		dont  bool
	}{
		{"nil config", nil, 100, 0, false},
		{"fixed", &PushbackConfig{RetryAfter: time.Second}, 100, time.Second, false},
		{"per queued", &PushbackConfig{RetryAfter: 100 * milli, PerQueued: milli}, 50, 150 * milli, false},
		{"capped", &PushbackConfig{RetryAfter: 100 * milli, PerQueued: milli, Max: 120 * milli}, 50, 120 * milli, false},
		{"no cap when max 0", &PushbackConfig{PerQueued: time.Second}, 1000, 1000 * time.Second, false},
		{"don't retry", &PushbackConfig{RetryAfter: time.Second, DontRetry: true}, 5, 0, true},
		{"huge queue saturates", &PushbackConfig{PerQueued: time.Hour}, 1 << 40, time.Duration(1<<63-1) / 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, dont := RetryAfter(tt.p, tt.queue)
			if d != tt.want || dont != tt.dont {
				t.Fatalf("RetryAfter = %v, %v; want %v, %v", d, dont, tt.want, tt.dont)
			}
		})
	}
}
