package plots_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/stormsim/stormsim/metrics/metricstest"
	"github.com/stormsim/stormsim/plots"
)

func ExampleAmplification() {
	dir, err := os.MkdirTemp("", "plots")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	r := metricstest.Storm() // or the *metrics.Result of a run
	p, err := plots.Amplification(r)
	if err != nil {
		log.Fatal(err)
	}
	files, err := plots.Write(dir, "amplification", p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Title.Text)
	for _, f := range files {
		fmt.Println(filepath.Base(f))
	}
	// Output:
	// Amplification per service
	// amplification.png
	// amplification.svg
}
