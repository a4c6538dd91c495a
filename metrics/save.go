package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormsim/stormsim/inputfile"
)

// The files Save writes into a results directory.
const (
	SummaryFile    = "summary.json"
	SeriesFile     = "timeseries.csv"
	HistogramsFile = "histograms.json"
	FaultsFile     = "faults.json"
)

// HistogramJSON is the lossless JSON form of an HDR histogram: its geometry
// and the non-zero bucket counts as [index, count] pairs in index order
// (the index is the histogram's own counts index, see Snapshot). Sparse
// pairs keep a 20,000-bucket latency histogram a few hundred bytes long
// while restoring every count exactly.
type HistogramJSON struct {
	Lowest             int64      `json:"lowest"`
	Highest            int64      `json:"highest"`
	SignificantFigures int64      `json:"significant_figures"`
	TotalCount         int64      `json:"total_count"`
	Counts             [][2]int64 `json:"counts"`
}

// Histograms is the content of histograms.json.
type Histograms struct {
	// Latency is the end-to-end latency of succeeded requests, in µs.
	Latency *HistogramJSON `json:"latency,omitempty"`
	// Services maps a service name to its attempt latency, in µs.
	Services map[string]*HistogramJSON `json:"services,omitempty"`
	// ServicesOK maps a service name to the latency of the attempts it
	// completed successfully, in µs.
	ServicesOK map[string]*HistogramJSON `json:"services_ok,omitempty"`
	// Certainty is the time to certainty of the writes that became
	// certain, in µs (absent unless the scenario configures convergence).
	Certainty *HistogramJSON `json:"certainty,omitempty"`
}

// EncodeHistogram returns the lossless JSON form of h (nil for nil).
func EncodeHistogram(h *hdrhistogram.Histogram) *HistogramJSON {
	if h == nil {
		return nil
	}
	s := h.Export()
	out := &HistogramJSON{
		Lowest:             s.LowestTrackableValue,
		Highest:            s.HighestTrackableValue,
		SignificantFigures: s.SignificantFigures,
		TotalCount:         h.TotalCount(),
		Counts:             [][2]int64{},
	}
	for i, c := range s.Counts {
		if c != 0 {
			out.Counts = append(out.Counts, [2]int64{int64(i), c})
		}
	}
	return out
}

// maxHistogramHighest bounds a decoded histogram's range: 2^40 µs, twelve
// days of latency.
const maxHistogramHighest = LatencyHighestUs

// Decode rebuilds the histogram, checking geometry, indices and the total.
func (hj *HistogramJSON) Decode() (*hdrhistogram.Histogram, error) {
	// The bounds hold every histogram stormsim writes (1 µs to 1 h, 2 or 3
	// figures) with room to spare, and keep a crafted file from sizing a
	// histogram of hundreds of MB per service.
	if hj.Lowest < 1 || hj.Highest < 2*hj.Lowest || hj.Highest > maxHistogramHighest || hj.SignificantFigures < 1 || hj.SignificantFigures > 3 {
		return nil, fmt.Errorf("bad geometry lowest=%d highest=%d significant_figures=%d (want 1 ≤ lowest, 2·lowest ≤ highest ≤ %d, 1 to 3 figures)", hj.Lowest, hj.Highest, hj.SignificantFigures, int64(maxHistogramHighest))
	}
	// The counts length follows from the geometry; New computes it.
	n := len(hdrhistogram.New(hj.Lowest, hj.Highest, int(hj.SignificantFigures)).Export().Counts)
	counts := make([]int64, n)
	prev, total := int64(-1), int64(0)
	for k, p := range hj.Counts {
		i, c := p[0], p[1]
		if i <= prev || i >= int64(n) {
			return nil, fmt.Errorf("counts[%d]: index %d out of order or beyond %d buckets", k, i, n)
		}
		if c <= 0 {
			return nil, fmt.Errorf("counts[%d]: count must be > 0, got %d", k, c)
		}
		counts[i] = c
		total += c
		prev = i
	}
	if total != hj.TotalCount {
		return nil, fmt.Errorf("counts sum to %d, total_count says %d", total, hj.TotalCount)
	}
	s := &hdrhistogram.Snapshot{
		LowestTrackableValue:  hj.Lowest,
		HighestTrackableValue: hj.Highest,
		SignificantFigures:    hj.SignificantFigures,
		Counts:                counts,
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return hdrhistogram.Import(s), nil
}

// Save writes r into dir (created if needed) as summary.json,
// timeseries.csv (when r has a series), histograms.json and faults.json,
// each atomically, and last the ManifestFile that binds them to r.RunID.
// The output is a deterministic function of r.
func Save(dir string, r *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("metrics: save: %w", err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, SummaryFile), func(w io.Writer) error {
		return WriteJSON(w, &r.Summary)
	}); err != nil {
		return err
	}
	files := []string{SummaryFile, HistogramsFile, FaultsFile}
	if r.Series != nil {
		if err := WriteFileAtomic(filepath.Join(dir, SeriesFile), r.Series.WriteCSV); err != nil {
			return err
		}
		files = append(files, SeriesFile)
	}
	h := Histograms{Latency: EncodeHistogram(r.Latency), Services: encodeHistograms(r.ServiceLatency),
		ServicesOK: encodeHistograms(r.ServiceOKLatency), Certainty: EncodeHistogram(r.Certainty)}
	if err := writeJSONFile(filepath.Join(dir, HistogramsFile), h); err != nil {
		return err
	}
	faults := r.Faults
	if faults == nil {
		faults = []FaultWindow{}
	}
	if err := writeJSONFile(filepath.Join(dir, FaultsFile), faults); err != nil {
		return err
	}
	return WriteManifest(dir, r.RunID, files...)
}

// encodeHistograms encodes a map of histograms by name (nil when empty).
func encodeHistograms(hs map[string]*hdrhistogram.Histogram) map[string]*HistogramJSON {
	if len(hs) == 0 {
		return nil
	}
	out := make(map[string]*HistogramJSON, len(hs))
	for name, h := range hs {
		out[name] = EncodeHistogram(h)
	}
	return out
}

// decodeHistograms decodes a map written by encodeHistograms; an error
// starts with the name at fault.
func decodeHistograms(hjs map[string]*HistogramJSON) (map[string]*hdrhistogram.Histogram, error) {
	if len(hjs) == 0 {
		return nil, nil
	}
	out := make(map[string]*hdrhistogram.Histogram, len(hjs))
	for name, hj := range hjs {
		if hj == nil {
			continue
		}
		h, err := hj.Decode()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = h
	}
	return out, nil
}

func writeJSONFile(path string, v any) error {
	return WriteFileAtomic(path, func(w io.Writer) error {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	})
}

// Load reads a results directory written by Save. summary.json is
// required; a missing timeseries.csv, histograms.json or faults.json
// leaves the matching field nil. A directory with a ManifestFile must
// match it: files of two saves (one killed midway) are an error, not a
// result. Errors name the file at fault.
func Load(dir string) (*Result, error) {
	r := &Result{}
	if m, err := ReadManifest(dir); err == nil {
		r.RunID = m.RunID
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	sp := filepath.Join(dir, SummaryFile)
	b, err := inputfile.Read(sp, maxOutputFile)
	if err != nil {
		return nil, fmt.Errorf("metrics: load: %w", err)
	}
	// Lenient about unknown fields: the summary is a contract that grows,
	// and a newer stormsim's results should still load.
	if err := decodeJSON(b, &r.Summary, false); err != nil {
		return nil, fmt.Errorf("metrics: load %s: %w", sp, err)
	}

	cp := filepath.Join(dir, SeriesFile)
	if b, err := inputfile.Read(cp, maxOutputFile); err == nil {
		ts, err := ReadCSV(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("metrics: load %s: %w", cp, err)
		}
		r.Series = ts
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("metrics: load: %w", err)
	}

	hp := filepath.Join(dir, HistogramsFile)
	if b, err := inputfile.Read(hp, maxOutputFile); err == nil {
		var h Histograms
		if err := decodeJSON(b, &h, true); err != nil {
			return nil, fmt.Errorf("metrics: load %s: %w", hp, err)
		}
		if h.Latency != nil {
			if r.Latency, err = h.Latency.Decode(); err != nil {
				return nil, fmt.Errorf("metrics: load %s: latency: %w", hp, err)
			}
		}
		if h.Certainty != nil {
			if r.Certainty, err = h.Certainty.Decode(); err != nil {
				return nil, fmt.Errorf("metrics: load %s: certainty: %w", hp, err)
			}
		}
		if r.ServiceLatency, err = decodeHistograms(h.Services); err != nil {
			return nil, fmt.Errorf("metrics: load %s: services.%w", hp, err)
		}
		if r.ServiceOKLatency, err = decodeHistograms(h.ServicesOK); err != nil {
			return nil, fmt.Errorf("metrics: load %s: services_ok.%w", hp, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("metrics: load: %w", err)
	}

	fp := filepath.Join(dir, FaultsFile)
	if b, err := inputfile.Read(fp, maxOutputFile); err == nil {
		if err := decodeJSON(b, &r.Faults, true); err != nil {
			return nil, fmt.Errorf("metrics: load %s: %w", fp, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("metrics: load: %w", err)
	}
	return r, nil
}

// decodeJSON decodes one JSON value, rejecting trailing data and, when
// strict, unknown fields; errors carry their line.
func decodeJSON(b []byte, v any, strict bool) error {
	d := json.NewDecoder(bytes.NewReader(b))
	if strict {
		d.DisallowUnknownFields()
	}
	if err := d.Decode(v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("line %d: %w", 1+bytes.Count(b[:se.Offset], []byte("\n")), err)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("line %d: field %s: %w", 1+bytes.Count(b[:te.Offset], []byte("\n")), te.Field, err)
		}
		return err
	}
	if d.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
