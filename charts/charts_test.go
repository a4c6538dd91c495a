package charts_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/charts"
	"github.com/stormsim/stormsim/metrics"
)

// The vendored files are the ones VERSION names, byte for byte, and the
// script is that uPlot followed by the chart module.
func TestVendoredUPlot(t *testing.T) {
	version, err := os.ReadFile("uplot/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"uPlot.iife.min.js", "uPlot.min.css"} {
		b, err := os.ReadFile("uplot/" + f)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if want := hex.EncodeToString(sum[:]) + "  " + f; !strings.Contains(string(version), want) {
			t.Errorf("uplot/%s does not match its SHA-256 in VERSION (%s)", f, want)
		}
	}
	if _, err := os.Stat("uplot/LICENSE"); err != nil {
		t.Error("the licence is not vendored with uPlot")
	}
	s := string(charts.Script())
	if !strings.HasPrefix(s, "/*! https://github.com/leeoniya/uPlot (v1.6.32) */") || !strings.Contains(s, "window.StormCharts = StormCharts") {
		t.Error("Script is not uPlot 1.6.32 then the chart module")
	}
}

func ExampleSeriesOf() {
	ts := &metrics.TimeSeries{Interval: time.Second, Columns: []string{metrics.ColGoodput, metrics.ColLatencyP99},
		Rows: [][]float64{{97, 41.5}, {0, math.NaN()}}}
	b, _ := json.Marshal(charts.SeriesOf(ts))
	fmt.Println(string(b))
	fmt.Println(charts.SeriesOf(&metrics.TimeSeries{}) == nil)
	// Output:
	// {"start_s":0,"interval_s":1,"columns":["goodput","latency_p99_ms"],"rows":[[97,41.5],[0,null]]}
	// true
}
