package traces

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// ImportGCPercent is the garbage collector's target percentage (GOGC) a
// process should run an import with. An import keeps every span until the
// model is inferred while decoding each document into garbage, so at
// Go's default of 100 the heap grows to about twice the spans before each
// collection: 1.17 GB of resident memory for a 208 MB file of a million
// spans, against 0.71 GB at 25, for no more CPU time (BenchmarkImport1MSpans
// measures the heap's peak at this setting). A library does not set the
// process's collector; cmd/stormsim's import does, for the import.
const ImportGCPercent = 25

// Import reads every file, infers one model from all their spans and
// writes it as a scenario. out is where the scenario will be written
// ("" for standard output, when own times cannot be empirical). The
// scenario is checked with topology before it is returned, so what Import
// returns always loads; a failure there is a bug reported as an error.
func Import(files []string, out, name string) (*Output, error) {
	return ImportContext(context.Background(), files, out, name)
}

// ImportContext is Import stopping with ctx's error when ctx ends (a
// signal): between documents as the files are read, and before the model
// is inferred and written. At most MaxSpans spans are imported, all files
// together.
func ImportContext(ctx context.Context, files []string, out, name string) (*Output, error) {
	var spans []Span
	var sources []string
	for _, f := range files {
		data, err := inputfile.Read(f, MaxFile)
		if err != nil {
			return nil, err
		}
		s, format, err := read(ctx, f, data, MaxSpans-len(spans))
		if err != nil {
			return nil, err
		}
		if spans == nil {
			spans = s // the one file's spans, not a copy of them
		} else {
			spans = append(spans, s...)
		}
		sources = append(sources, fmt.Sprintf("%s (%s)", filepath.Base(f), format))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := infer(spans) // the spans are Import's own: no copy
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m.Entry == "" {
		return nil, fmt.Errorf("%s: no request could be followed to a service: %s", strings.Join(files, ", "), strings.Join(m.Notes, "; "))
	}
	opt := WriteOptions{Name: name, Sources: sources}
	if out != "" {
		opt.SamplesPrefix = strings.TrimSuffix(out, filepath.Ext(out))
	}
	o := m.Scenario(opt)
	if out == "" {
		if _, err := topology.Parse("imported scenario", o.YAML, nil); err != nil {
			return nil, fmt.Errorf("traces: the imported scenario does not load (a bug): %w", err)
		}
	}
	return o, nil
}

// Write writes the sample files and then the scenario to path, each
// atomically, and checks that the scenario loads.
func (o *Output) Write(path string) error {
	for _, p := range sortedKeys(o.Samples) {
		data := o.Samples[p]
		if err := metrics.WriteFileAtomic(p, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return err
		}
	}
	if err := metrics.WriteFileAtomic(path, func(w io.Writer) error { _, err := w.Write(o.YAML); return err }); err != nil {
		return err
	}
	if _, err := topology.Load(path, nil); err != nil {
		return fmt.Errorf("traces: the imported scenario does not load (a bug): %w", err)
	}
	return nil
}

// WriteTo writes the scenario to w (standard output).
func (o *Output) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(o.YAML)
	return int64(n), err
}
