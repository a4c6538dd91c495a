package plots_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/stormsim/stormsim/metrics/metricstest"
	"github.com/stormsim/stormsim/plots"
)

func ExampleBudget() {
	dir, err := os.MkdirTemp("", "plots")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	r := metricstest.Storm() // or the *metrics.Result of a run
	p, err := plots.Budget(r)
	if err != nil {
		log.Fatal(err)
	}
	files, err := plots.Write(dir, "budget", p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Title.Text)
	for _, f := range files {
		fmt.Println(filepath.Base(f))
	}
	// Output:
	// Retry budget level
	// budget.png
	// budget.svg
}
