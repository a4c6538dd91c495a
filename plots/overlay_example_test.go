package plots_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
	"github.com/stormsim/stormsim/plots"
)

func ExampleOverlay() {
	dir, err := os.MkdirTemp("", "plots")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// One result per policy variant, as stormsim compare produces them.
	variants := map[string]*metrics.Result{
		"no retries": metricstest.Storm(),
		"3 retries":  metricstest.Storm(),
	}
	files, err := plots.Overlay(dir, "goodput_by_variant", variants, "goodput",
		plots.WithTitle("Goodput by retry policy"), plots.WithYLabel("requests/s"))
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range files {
		fmt.Println(filepath.Base(f))
	}
	// Output:
	// goodput_by_variant.png
	// goodput_by_variant.svg
}

func ExampleWriteReport() {
	dir, err := os.MkdirTemp("", "report")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	r := metricstest.Storm()
	files, err := plots.WriteAll(dir, r)
	if err != nil {
		log.Fatal(err)
	}
	if err := plots.WriteReport(dir, r, files); err != nil {
		log.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, plots.ReportFile))
	fmt.Println(len(files), "plot files;", "report written:", err == nil && fi.Size() > 0)
	// Output:
	// 14 plot files; report written: true
}
