package analysis

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

func TestParseVariant(t *testing.T) {
	tests := []struct {
		in      string
		want    Variant
		wantErr string
	}{
		{"budget:services.a.calls.b.budget.ratio=0.1", Variant{Name: "budget", Sets: []string{"services.a.calls.b.budget.ratio=0.1"}}, ""},
		{"two:a=1, b=2", Variant{Name: "two", Sets: []string{"a=1", "b=2"}}, ""},
		{"file=other.yaml", Variant{Name: "file", File: "other.yaml"}, ""},
		{"dir=exp:v1/x.yaml", Variant{Name: "dir", File: "exp:v1/x.yaml"}, ""},
		{"nothing", Variant{}, "want NAME=FILE"},
		{"x:", Variant{}, "no overrides"},
		{"x:a", Variant{}, "not path=value"},
		{"x=", Variant{}, "empty file"},
		{":a=1", Variant{}, "empty name"},
		{"baseline:a=1", Variant{}, "reserved"},
		{"../x:a=1", Variant{}, "slash"},
		{".hidden:a=1", Variant{}, "dot"},
	}
	for _, tt := range tests {
		got, err := ParseVariant(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseVariant(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseVariant(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if back, err := ParseVariant(got.String()); err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("ParseVariant(%q.String()) = %+v, %v; want a round trip", tt.in, back, err)
		}
	}
}

func TestVariants(t *testing.T) {
	declared := []topology.Variant{{Name: "budget", Set: []string{"budget=0.1"}}}
	got, err := Variants(declared, []Variant{{Name: "wide", Sets: []string{"services.db.workers=8"}}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range got {
		names = append(names, v.Name)
	}
	if want := []string{Baseline, "budget", "wide"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Variants names = %v, want %v", names, want)
	}
	if _, err := Variants(declared, []Variant{{Name: "budget", Sets: []string{"a=1"}}}); err == nil || !strings.Contains(err.Error(), "declared twice") {
		t.Errorf("duplicate variant: err = %v", err)
	}
	if _, err := Variants([]topology.Variant{{Name: "baseline"}}, nil); err == nil || !strings.Contains(err.Error(), "variants[0]") {
		t.Errorf("variant named baseline: err = %v, want one naming variants[0]", err)
	}
}

func testCompare(t *testing.T) *Comparison {
	t.Helper()
	vs, err := Variants([]topology.Variant{{Name: "budget", Set: []string{"budget=0.1"}}},
		[]Variant{{Name: "wide", Sets: []string{"services.db.workers=8"}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compare(context.Background(), fakeRunner, fakeBuild, vs, 2)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCompareGoldenFake(t *testing.T) {
	c := testCompare(t)
	for _, col := range c.Columns {
		if col.Result.Summary.Seed != 7 {
			t.Errorf("variant %s ran seed %d, want the baseline's 7 (common random numbers)", col.Variant.Name, col.Result.Summary.Seed)
		}
	}
	var b bytes.Buffer
	if err := c.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/compare.txt", b.Bytes())
}

// Workers change nothing but speed.
func TestCompareWorkersIdentical(t *testing.T) {
	vs := []Variant{{Name: Baseline}, {Name: "a", Sets: []string{"budget=1"}}, {Name: "b", Sets: []string{"note=x"}}}
	var out [2]bytes.Buffer
	for i, w := range []int{1, 3} {
		c, err := Compare(context.Background(), fakeRunner, fakeBuild, vs, w)
		if err != nil {
			t.Fatal(err)
		}
		c.WriteTable(&out[i])
	}
	if out[0].String() != out[1].String() {
		t.Errorf("1 and 3 workers differ:\n%s\nvs\n%s", out[0].String(), out[1].String())
	}
}

func TestCompareBadVariant(t *testing.T) {
	vs := []Variant{{Name: Baseline}, {Name: "typo", Sets: []string{"services.dbb.workers=8"}}}
	_, err := Compare(context.Background(), fakeRunner, fakeBuild, vs, 1)
	if err == nil || !strings.Contains(err.Error(), "variant typo") || !strings.Contains(err.Error(), "dbb") {
		t.Errorf("err = %v, want one naming the variant and the bad path", err)
	}
}

// A failure stops the comparison, and the failure reported is the first in
// column order, not in finishing order: here variant c fails at once, and
// variant b, still running, then fails on its own (not because c's
// failure cancelled it).
func TestCompareReportsFirstFailureInColumnOrder(t *testing.T) {
	errB, errC := errors.New("b failed"), errors.New("c failed")
	vs := []Variant{{Name: Baseline}, {Name: "b", Sets: []string{"workload.rate=2"}}, {Name: "c", Sets: []string{"workload.rate=3"}}}
	var bStarted chan struct{}
	run := RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		switch sc.Workload.Rate {
		case 2:
			close(bStarted)
			<-ctx.Done() // c's failure cancels the others
			return nil, errB
		case 3:
			<-bStarted
			return nil, errC
		}
		return fakeRun(ctx, sc)
	})
	bStarted = make(chan struct{})
	_, err := Compare(context.Background(), run, fakeBuild, vs, 3)
	if !errors.Is(err, errB) || !strings.Contains(err.Error(), "variant b") {
		t.Errorf("err = %v, want variant b's own failure", err)
	}

	// A variant stopped by another's failure is not reported in its place.
	stopped := RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		if sc.Workload.Rate == 2 {
			close(bStarted)
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		return run(ctx, sc)
	})
	bStarted = make(chan struct{})
	_, err = Compare(context.Background(), stopped, fakeBuild, vs, 3)
	if !errors.Is(err, errC) || strings.Contains(err.Error(), "variant b") {
		t.Errorf("err = %v, want variant c's failure only", err)
	}
}

// On the first failure no further variant starts.
func TestCompareStopsOnError(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int64
	vs := []Variant{{Name: Baseline, Sets: []string{"workload.rate=1"}}, {Name: "b"}, {Name: "c"}}
	run := RunnerFunc(func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
		calls.Add(1)
		if sc.Workload.Rate == 1 {
			return nil, boom
		}
		return fakeRun(ctx, sc)
	})
	_, err := Compare(context.Background(), run, fakeBuild, vs, 1)
	if !errors.Is(err, boom) || calls.Load() != 1 {
		t.Errorf("err = %v after %d runs, want boom after 1", err, calls.Load())
	}
}
