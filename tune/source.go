package tune

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/traces"
)

// SourceKind says how a hop's samples are read.
type SourceKind uint8

const (
	// Numbers: a file of numbers, one per line, or a CSV column (FILE:COLUMN).
	Numbers SourceKind = iota
	// Vegeta: results written by `vegeta encode --to json`.
	Vegeta
	// Results: a results directory of `stormsim load` or `run --out`,
	// read through its histograms.json.
	Results
	// Scenario: the unloaded latency a scenario's service times imply.
	Scenario
	// Traces: the durations of a service's successful server spans in an
	// OTLP JSON or Jaeger JSON trace file.
	Traces
)

var sourceKindNames = [...]string{"numbers", "vegeta", "results", "scenario", "traces"}

// String returns the kind's prefix in a hop spec.
func (k SourceKind) String() string {
	if int(k) < len(sourceKindNames) {
		return sourceKindNames[k]
	}
	return fmt.Sprintf("source(%d)", k)
}

// Source is where one hop's samples come from, parsed from a hop spec:
//
//	FILE            numbers, one per line, in the --unit
//	FILE:COLUMN     the named column of a CSV file with a header row
//	vegeta:FILE     vegeta JSON results (2xx only)
//	results:DIR     a results directory (histograms.json); DIR#SERVICE
//	                picks another service than the hop's name. A bare
//	                directory is read the same way.
//	scenario:FILE   samples of the scenario's service times down the
//	                chain from the hop's service (no queueing); FILE#SERVICE
//	                as for results
//	traces:FILE     the durations of the hop's service's successful server
//	                spans in an OTLP JSON or Jaeger JSON file; FILE#SERVICE
//	                as for results
type Source struct {
	Kind    SourceKind
	Path    string
	Column  string
	Service string
}

// ParseSource parses a hop spec (the part after "name=").
func ParseSource(spec string) (Source, error) {
	if spec == "" {
		return Source{}, errors.New("empty source")
	}
	for _, k := range []SourceKind{Vegeta, Results, Scenario, Traces} {
		if rest, ok := strings.CutPrefix(spec, k.String()+":"); ok {
			if rest == "" {
				return Source{}, fmt.Errorf("%s: missing path", spec)
			}
			s := Source{Kind: k, Path: rest}
			if k != Vegeta {
				s.Path, s.Service, _ = strings.Cut(rest, "#")
			}
			return s, nil
		}
	}
	if fi, err := os.Stat(spec); err == nil {
		if fi.IsDir() {
			return Source{Kind: Results, Path: spec}, nil
		}
		return Source{Kind: Numbers, Path: spec}, nil
	}
	if i := strings.LastIndex(spec, ":"); i > 0 && i < len(spec)-1 {
		return Source{Kind: Numbers, Path: spec[:i], Column: spec[i+1:]}, nil
	}
	return Source{Kind: Numbers, Path: spec}, nil
}

// String formats the source back into a spec.
func (s Source) String() string {
	switch s.Kind {
	case Numbers:
		if s.Column != "" {
			return s.Path + ":" + s.Column
		}
		return s.Path
	case Vegeta:
		return "vegeta:" + s.Path
	}
	if s.Service != "" {
		return s.Kind.String() + ":" + s.Path + "#" + s.Service
	}
	return s.Kind.String() + ":" + s.Path
}

// LoadOptions configure how sources are read.
type LoadOptions struct {
	// Unit of plain numbers. Default 1ms.
	Unit time.Duration
	// ScenarioSamples is how many samples a scenario source draws.
	// Default 100,000.
	ScenarioSamples int
	// Seed seeds a scenario source's draws. Default 1.
	Seed uint64
	// MaxSamples caps the samples expanded from a histogram, thinned
	// evenly over its quantiles. Default 2,000,000.
	MaxSamples int
}

// ParseHops parses "name=SPEC" hop specs, top-down, and loads them.
func ParseHops(specs []string, opt LoadOptions) ([]Hop, error) {
	var hops []Hop
	for _, spec := range specs {
		name, src, ok := strings.Cut(spec, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("hop %q: want NAME=SOURCE", spec)
		}
		s, err := ParseSource(strings.TrimSpace(src))
		if err != nil {
			return nil, fmt.Errorf("hop %q: %w", name, err)
		}
		h, err := s.Load(name, opt)
		if err != nil {
			return nil, fmt.Errorf("hop %q: %w", name, err)
		}
		hops = append(hops, h)
	}
	return hops, nil
}

// MaxInputFile bounds a file of samples or of vegeta results: only a
// regular file of at most this size is read (inputfile.Read), so a
// device, a named pipe or a runaway file fails at once.
const MaxInputFile = 256 << 20

// Load reads the samples of the hop named hop.
func (s Source) Load(hop string, opt LoadOptions) (Hop, error) {
	if opt.Unit == 0 {
		opt.Unit = time.Millisecond
	}
	if opt.ScenarioSamples == 0 {
		opt.ScenarioSamples = 100000
	}
	if opt.Seed == 0 {
		opt.Seed = 1
	}
	if opt.MaxSamples == 0 {
		opt.MaxSamples = 2000000
	}
	h := Hop{Name: hop, Source: s.String()}
	var d []time.Duration
	switch s.Kind {
	case Numbers:
		data, err := inputfile.Read(s.Path, MaxInputFile)
		if err != nil {
			return h, err
		}
		if d, err = ReadSamples(bytes.NewReader(data), s.Path, s.Column, opt.Unit); err != nil {
			return h, err
		}
	case Vegeta:
		data, err := inputfile.Read(s.Path, MaxInputFile)
		if err != nil {
			return h, err
		}
		res, err := ReadVegeta(bytes.NewReader(data), s.Path)
		if err != nil {
			return h, err
		}
		d = res.Samples
		if res.Excluded > 0 {
			h.Note = fmt.Sprintf("%d of %d vegeta results excluded (no response or non-2xx)", res.Excluded, res.Excluded+len(res.Samples))
		}
	case Results:
		var err error
		if d, h.Note, err = loadResults(s.Path, cmpOr(s.Service, hop), opt.MaxSamples); err != nil {
			return h, err
		}
	case Scenario:
		var err error
		if d, err = sampleScenario(s.Path, cmpOr(s.Service, hop), opt.ScenarioSamples, opt.Seed); err != nil {
			return h, err
		}
		h.Note = "unloaded latency sampled from the scenario's service times (no queueing)"
	case Traces:
		var err error
		if d, h.Note, err = traces.ServerLatency(s.Path, cmpOr(s.Service, hop)); err != nil {
			return h, err
		}
	default:
		return h, fmt.Errorf("unknown source kind %v", s.Kind)
	}
	var err error
	if h.Samples, err = NewSamples(d); err != nil {
		return h, fmt.Errorf("%s: %w", s.Path, err)
	}
	return h, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// loadResults reads the latency of a service's successfully completed
// attempts from a results directory and expands it into samples, with a
// note saying how many attempts that left out. A refusal is answered at
// once and a failure is no answer worth waiting for: taking either for a
// latency sample would recommend timeouts and hedge delays of microseconds.
func loadResults(dir, service string, maxSamples int) ([]time.Duration, string, error) {
	if _, err := os.Stat(filepath.Join(dir, metrics.HistogramsFile)); errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("%s: no %s (write results with --out)", dir, metrics.HistogramsFile)
	}
	r, err := metrics.Load(dir)
	if err != nil {
		return nil, "", err
	}
	all, ok := r.ServiceLatency[service]
	if !ok || all == nil {
		var names []string
		for n := range r.ServiceLatency {
			names = append(names, n)
		}
		return nil, "", fmt.Errorf("%s: no latency histogram for service %q (%s)", filepath.Join(dir, metrics.HistogramsFile), service, haveServices(names))
	}
	ok2 := r.ServiceOKLatency[service]
	if ok2 == nil {
		return expandHistogram(all, maxSamples), fmt.Sprintf("all %d attempts taken as samples: %s has no latency of succeeded attempts "+
			"(services_ok), so refusals and failures are counted as answers; rerun with this version to leave them out", all.TotalCount(), metrics.HistogramsFile), nil
	}
	note := fmt.Sprintf("%d of %d attempts dropped (refused or failed): only succeeded attempts are latency samples",
		all.TotalCount()-ok2.TotalCount(), all.TotalCount())
	return expandHistogram(ok2, maxSamples), note, nil
}

// haveServices says which services' latency a results directory holds,
// and how to name one.
func haveServices(names []string) string {
	if len(names) == 0 {
		return "it holds no service's latency: rerun with this version"
	}
	return "have: " + strings.Join(sortedCopy(names), ", ") + "; pick one with results:DIR#SERVICE, or name a load --target run's target with --name"
}

// expandHistogram turns a µs histogram into samples at each bucket's
// highest equivalent value (the value HDR reports for its quantiles). Above
// maxSamples it keeps every bucket's share by systematic thinning.
func expandHistogram(h *hdrhistogram.Histogram, maxSamples int) []time.Duration {
	total := h.TotalCount()
	k := 1.0
	if total > int64(maxSamples) {
		k = float64(maxSamples) / float64(total)
	}
	var out []time.Duration
	var cum int64
	kept := 0
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		cum += b.Count
		want := int(float64(cum) * k)
		v := time.Duration(b.To) * time.Microsecond
		for ; kept < want; kept++ {
			out = append(out, v)
		}
	}
	return out
}

// sampleScenario draws n samples of the unloaded latency of a call into
// service: its service time plus, in order, each downstream call's (fan-out
// and parallel groups wait for their slowest member), plus network delay
// both ways.
func sampleScenario(path, service string, n int, seed uint64) ([]time.Duration, error) {
	sc, err := topology.Load(path, nil)
	if err != nil {
		return nil, err
	}
	if sc.Service(service) == nil {
		var names []string
		for _, s := range sc.Services {
			names = append(names, s.Name)
		}
		return nil, fmt.Errorf("%s: no service %q (have: %s)", path, service, strings.Join(names, ", "))
	}
	m := &scenarioModel{sc: sc, r: model.Stream(seed, "tune/"+service), samplers: map[*topology.Dist]*dist.Sampler{}}
	out := make([]time.Duration, n)
	for i := range out {
		d, err := m.service(service, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out[i] = d
	}
	return out, nil
}

type scenarioModel struct {
	sc       *topology.Scenario
	r        *rand.Rand
	samplers map[*topology.Dist]*dist.Sampler
}

func (m *scenarioModel) draw(d *topology.Dist, what string) (time.Duration, error) {
	s, ok := m.samplers[d]
	if !ok {
		v, err := dist.New(*d)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
		s = &v
		m.samplers[d] = s
	}
	return s.Sample(m.r), nil
}

func (m *scenarioModel) service(name string, depth int) (time.Duration, error) {
	if depth > len(m.sc.Services) {
		return 0, fmt.Errorf("service %q: call cycle", name)
	}
	s := m.sc.Service(name)
	if s == nil {
		return 0, fmt.Errorf("no service %q", name)
	}
	t, err := m.draw(&s.ServiceTime, "services."+name+".service_time")
	if err != nil {
		return 0, err
	}
	for i := range s.Calls {
		d, err := m.call(&s.Calls[i], depth)
		if err != nil {
			return 0, err
		}
		t += d
	}
	return t, nil
}

func (m *scenarioModel) call(c *topology.Call, depth int) (time.Duration, error) {
	var t time.Duration
	if len(c.Parallel) > 0 {
		for i := range c.Parallel {
			d, err := m.call(&c.Parallel[i], depth)
			if err != nil {
				return 0, err
			}
			t = max(t, d)
		}
		return t, nil
	}
	for range max(c.Fanout, 1) {
		d, err := m.service(c.To, depth+1)
		if err != nil {
			return 0, err
		}
		if c.Network != nil {
			for range 2 {
				nd, err := m.draw(c.Network, "network to "+c.To)
				if err != nil {
					return 0, err
				}
				d += nd
			}
		}
		t = max(t, d)
	}
	return t, nil
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
