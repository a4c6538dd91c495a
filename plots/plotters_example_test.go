package plots_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/metrics/metricstest"
	"github.com/stormsim/stormsim/plots"
	"gonum.org/v1/plot"
)

// ExampleAmplification shows the whole pattern every plotter follows:
// build the plot from a result, then write it as PNG and SVG.
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

// draw does what ExampleAmplification spells out, for the other plotters:
// it plots the synthetic storm, its writes converging after UNKNOWN, and
// prints the title and the files written.
func draw(name string, plotter func(*metrics.Result) (*plot.Plot, error)) {
	dir, err := os.MkdirTemp("", "plots")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	p, err := plotter(metricstest.Converging())
	if err != nil {
		log.Fatal(err)
	}
	files, err := plots.Write(dir, name, p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Title.Text)
	for _, f := range files {
		fmt.Println(filepath.Base(f))
	}
}

func ExampleBreaker() {
	draw("breaker", plots.Breaker)
	// Output:
	// Circuit breaker state
	// breaker.png
	// breaker.svg
}

func ExampleBudget() {
	draw("budget", plots.Budget)
	// Output:
	// Retry budget level
	// budget.png
	// budget.svg
}

func ExampleLatencyCDF() {
	draw("latency_cdf", plots.LatencyCDF)
	// Output:
	// Latency distribution (CDF)
	// latency_cdf.png
	// latency_cdf.svg
}

func ExampleLatency() {
	draw("latency", plots.Latency)
	// Output:
	// End-to-end latency of succeeded requests
	// latency.png
	// latency.svg
}

func ExampleQueue() {
	draw("queue", plots.Queue)
	// Output:
	// Queue length per service
	// queue.png
	// queue.svg
}

func ExampleThroughput() {
	draw("throughput", plots.Throughput)
	// Output:
	// Offered load vs goodput
	// throughput.png
	// throughput.svg
}

func ExampleUnknownIntents() {
	draw("unknown_intents", plots.UnknownIntents)
	// Output:
	// Intents unknown over time
	// unknown_intents.png
	// unknown_intents.svg
}

func ExampleCertaintyCDF() {
	draw("certainty_cdf", plots.CertaintyCDF)
	// Output:
	// Time to certainty (CDF)
	// certainty_cdf.png
	// certainty_cdf.svg
}
