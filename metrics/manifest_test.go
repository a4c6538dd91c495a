package metrics_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
)

// TestLoadRefusesMixedSaves: a directory holding files of two saves (a
// save killed after its new summary, beside the histograms of the last
// one) is refused, naming the file; before run.json it loaded as one run
// (issue 17, item 11).
func TestLoadRefusesMixedSaves(t *testing.T) {
	parts := metricstest.StormParts(2)
	older, newer := t.TempDir(), t.TempDir()
	parts[0].RunID = "older"
	if err := metrics.Save(older, parts[0]); err != nil {
		t.Fatal(err)
	}
	if err := metrics.Save(newer, parts[1]); err != nil {
		t.Fatal(err)
	}
	m, err := metrics.ReadManifest(older)
	if err != nil || m.RunID != "older" || len(m.Files) != 4 {
		t.Fatalf("manifest %+v, %v: want run older over 4 files", m, err)
	}
	r, err := metrics.Load(older)
	if err != nil || r.RunID != "older" {
		t.Fatalf("Load = %v, run %q; want run older", err, r.RunID)
	}
	b, err := os.ReadFile(filepath.Join(newer, metrics.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(older, metrics.SummaryFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = metrics.Load(older)
	if !errors.Is(err, metrics.ErrMismatch) || !strings.Contains(err.Error(), "summary.json does not match run.json (run older)") {
		t.Errorf("Load of a mixed directory: %v", err)
	}
	// A file the manifest lists that is gone is a mismatch too.
	if err := os.Remove(filepath.Join(newer, metrics.HistogramsFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.Load(newer); !errors.Is(err, metrics.ErrMismatch) {
		t.Errorf("Load without a listed file: %v", err)
	}
}

// TestManifestRunIDIsDeterministic: without a run id, Save derives one
// from the content, so saving one result twice writes the same bytes.
func TestManifestRunIDIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := metrics.Save(d, metricstest.Storm()); err != nil {
			t.Fatal(err)
		}
	}
	ma, err := os.ReadFile(filepath.Join(a, metrics.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	mb, err := os.ReadFile(filepath.Join(b, metrics.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(ma) != string(mb) {
		t.Errorf("two saves of one result wrote different manifests:\n%s\n%s", ma, mb)
	}
}

// TestManifestNamesStayInTheDirectory: a crafted manifest cannot make
// ReadManifest read outside its directory.
func TestManifestNamesStayInTheDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, metrics.ManifestFile), []byte(`{"run_id": "x", "files": {"../../etc/passwd": "00"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.ReadManifest(dir); err == nil || !strings.Contains(err.Error(), "not a name in its directory") {
		t.Errorf("ReadManifest: %v", err)
	}
}
