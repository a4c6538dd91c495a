package analysis

import (
	"context"
	"fmt"
	"strings"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// Runner runs one scenario to its result. The command line wires it to the
// simulator (sim.Run); tests use fakes, so the logic of comparisons, sweeps
// and the metastability search is testable without a simulator.
//
// A Runner must be safe for concurrent use when given to Sweep with more
// than one worker; each call receives its own Scenario.
type Runner interface {
	Run(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error)
}

// RunnerFunc adapts a function to a Runner.
type RunnerFunc func(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error)

// Run calls f(ctx, sc).
func (f RunnerFunc) Run(ctx context.Context, sc *topology.Scenario) (*metrics.Result, error) {
	return f(ctx, sc)
}

// Builder builds the scenario of one run: variant v's scenario with the
// extra overrides (path=value, the --set syntax) laid over it, extra last so
// that a swept parameter wins over a variant's own setting. It must return a
// fresh Scenario on every call, since runs may proceed in parallel. The
// command line implements it with topology.Parse; tests build scenarios in
// code.
type Builder func(v Variant, extra []string) (*topology.Scenario, error)

// Variant is one policy variant of an experiment: overrides laid over the
// scenario as written, or another scenario file altogether.
//
// The zero Variant with Name Baseline is the scenario as written.
type Variant struct {
	// Name labels the variant in tables, CSV files and plots.
	Name string
	// Sets are overrides in the --set syntax (path=value), applied in order.
	Sets []string
	// File, when not empty, names a scenario file run instead of the base
	// scenario (Sets then apply to it). Its seed is replaced by the base
	// seed, so the variant still shares common random numbers.
	File string
}

// Baseline is the name of the variant that is the scenario as written.
const Baseline = "baseline"

// String returns the variant as the --variant flag spells it.
func (v Variant) String() string {
	switch {
	case v.File != "":
		return v.Name + "=" + v.File
	case len(v.Sets) > 0:
		return v.Name + ":" + strings.Join(v.Sets, ",")
	}
	return v.Name
}

// ParseVariant parses a --variant flag value: NAME=FILE (another scenario
// file) or NAME:path=value,path=value (overrides of the scenario). The name
// must not be empty, must not contain a comma, quote or slash (it names CSV
// cells and output directories), and must not be "baseline", which always
// names the scenario as written.
func ParseVariant(s string) (Variant, error) {
	colon := strings.IndexByte(s, ':')
	eq := strings.IndexByte(s, '=')
	var v Variant
	switch {
	case colon >= 0 && (eq < 0 || colon < eq):
		v.Name = s[:colon]
		for _, set := range strings.Split(s[colon+1:], ",") {
			set = strings.TrimSpace(set)
			if set == "" {
				continue
			}
			if !strings.Contains(set, "=") {
				return Variant{}, fmt.Errorf("variant %q: override %q is not path=value", s, set)
			}
			v.Sets = append(v.Sets, set)
		}
		if len(v.Sets) == 0 {
			return Variant{}, fmt.Errorf("variant %q: no overrides after %q", s, v.Name+":")
		}
	case eq >= 0:
		v.Name, v.File = s[:eq], s[eq+1:]
		if v.File == "" {
			return Variant{}, fmt.Errorf("variant %q: empty file name after %q", s, v.Name+"=")
		}
	default:
		return Variant{}, fmt.Errorf("variant %q: want NAME=FILE or NAME:path=value[,path=value]", s)
	}
	if err := checkVariantName(v.Name); err != nil {
		return Variant{}, fmt.Errorf("variant %q: %w", s, err)
	}
	return v, nil
}

func checkVariantName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return fmt.Errorf("empty name")
	case name == Baseline:
		return fmt.Errorf("the name %q is reserved for the scenario as written", Baseline)
	case strings.ContainsAny(name, ",\"\n/\\") || strings.HasPrefix(name, "."):
		// Names label CSV cells and name output directories.
		return fmt.Errorf("name %q must not contain a comma, quote, slash or newline, nor start with a dot", name)
	}
	return nil
}

// Variants returns the variants of an experiment in column order: the
// baseline first, then the scenario's own `variants:`, then those given on
// the command line. Names must be unique.
func Variants(declared []topology.Variant, flags []Variant) ([]Variant, error) {
	out := []Variant{{Name: Baseline}}
	seen := map[string]bool{Baseline: true}
	add := func(v Variant, where string) error {
		if err := checkVariantName(v.Name); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if seen[v.Name] {
			return fmt.Errorf("%s: variant %q declared twice", where, v.Name)
		}
		seen[v.Name] = true
		out = append(out, v)
		return nil
	}
	for i, d := range declared {
		v := Variant{Name: d.Name, Sets: append([]string(nil), d.Set...)}
		if err := add(v, fmt.Sprintf("variants[%d]", i)); err != nil {
			return nil, err
		}
	}
	for _, v := range flags {
		if err := add(v, "--variant "+v.String()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReplicaSeed returns the seed of replica r of a scenario whose seed is
// seed. Replica 0 runs the scenario's own seed, so a one-replica sweep point
// reproduces `stormsim run`; later replicas get seeds mixed from (seed, r)
// by SplitMix64, so they are independent of one another and of the order
// or parallelism in which they run. All variants of a replica share its
// seed, and hence its arrivals and service times (common random numbers).
func ReplicaSeed(seed uint64, r int) uint64 {
	if r == 0 {
		return seed
	}
	z := seed + uint64(r)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// build builds v's scenario with extra overrides and the seed of replica r.
func build(b Builder, v Variant, extra []string, baseSeed uint64, r int) (*topology.Scenario, error) {
	sc, err := b(v, extra)
	if err != nil {
		return nil, fmt.Errorf("variant %s: %w", v.Name, err)
	}
	sc.Seed = ReplicaSeed(baseSeed, r)
	return sc, nil
}

// ScenarioBuilder returns the Builder of a scenario loaded from YAML: a
// variant's overrides and the extra ones are laid over base with
// Scenario.WithSets, so every run is re-validated like the file itself. A
// variant naming another file is read with load (for example
// topology.Load); nil load rejects such variants.
func ScenarioBuilder(base *topology.Scenario, load func(path string, sets []string) (*topology.Scenario, error)) Builder {
	return func(v Variant, extra []string) (*topology.Scenario, error) {
		sets := append(append([]string(nil), v.Sets...), extra...)
		if v.File == "" {
			return base.WithSets(sets...)
		}
		if load == nil {
			return nil, fmt.Errorf("variant %s: scenario files are not supported here", v.Name)
		}
		return load(v.File, sets)
	}
}
