package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/tune"
)

func init() {
	register(&command{
		name:    "tune",
		summary: "recommend timeouts, retries, hedging and a retry budget from measured latency",
		usage:   "--deadline D --hops NAME=SOURCE,... [flags]",
		example: `  stormsim tune --deadline 2s --hops gateway=gw.txt,orders=orders.csv:latency_ms,db=vegeta:db.json
  stormsim tune --deadline 1s --hops edge=results:out/load,store=results:out/load --format json
  stormsim tune --deadline 2s --hops gateway=gw.txt,orders=o.txt,db=db.txt --verify chain.yaml --out out/tune

Sources (top-down, one per hop): FILE (numbers in --unit, one per line),
FILE:COLUMN (a CSV column), vegeta:FILE (vegeta encode --to json),
results:DIR[#SERVICE] (a stormsim results directory), scenario:FILE[#SERVICE]
(the unloaded latency a scenario's service times imply).`,
		setup: func(fs *pflag.FlagSet) func(context.Context, []string, io.Writer) error {
			hops := fs.StringSlice("hops", nil, "hops top-down as `NAME=SOURCE`, comma-separated or repeated")
			deadline := fs.Duration("deadline", 0, "end-to-end deadline of a request at the top (required)")
			unit := fs.String("unit", "ms", "unit of plain numbers: ns, us, ms or s")
			pct := fs.String("percentile", "p99.9", "attempt timeout at this latency percentile")
			hedgePct := fs.String("hedge-percentile", "p95", "hedge delay at this latency percentile")
			maxAmp := fs.Float64("max-amplification", 1.2, "worst-case load amplification the retry budget allows")
			response := fs.Duration("response", 0, "time each hop reserves for its response to travel back")
			maxAttempts := fs.Int("max-attempts", 3, "most attempts recommended at the retry owner")
			samples := fs.Int("samples", 100000, "samples drawn from a scenario: source")
			seed := fs.Uint64("seed", 1, "seed of the samples drawn from a scenario: source")
			format := fs.String("format", "text", "output format: text or json")
			out := fs.String("out", "", "write plan.txt, plan.json and a latency CDF plot per hop to `DIR`")
			verify := fs.String("verify", "", "simulate `SCENARIO` as written and with the plan applied, side by side")
			sets := fs.StringArray("set", nil, "override a value of the --verify scenario: `path=value` (repeatable)")
			return func(ctx context.Context, args []string, w io.Writer) error {
				if len(args) != 0 {
					return &exitError{exitUsage, fmt.Errorf("unexpected arguments %q (hops go in --hops)", args)}
				}
				if len(*hops) == 0 {
					return &exitError{exitUsage, fmt.Errorf("--hops: give at least one NAME=SOURCE")}
				}
				if *deadline <= 0 {
					return &exitError{exitUsage, fmt.Errorf("--deadline: required and > 0")}
				}
				if *format != "text" && *format != "json" {
					return &exitError{exitUsage, fmt.Errorf("--format: want text or json, got %q", *format)}
				}
				u, err := tune.ParseUnit(*unit)
				if err != nil {
					return &exitError{exitUsage, fmt.Errorf("--unit: %w", err)}
				}
				q, err := parsePercentile(*pct)
				if err != nil {
					return &exitError{exitUsage, fmt.Errorf("--percentile: %w", err)}
				}
				hq, err := parsePercentile(*hedgePct)
				if err != nil {
					return &exitError{exitUsage, fmt.Errorf("--hedge-percentile: %w", err)}
				}
				hs, err := tune.ParseHops(*hops, tune.LoadOptions{Unit: u, ScenarioSamples: *samples, Seed: *seed})
				if err != nil {
					return err
				}
				plan, err := tune.Recommend(hs, tune.Options{
					Deadline: *deadline, Percentile: q, HedgePercentile: hq,
					MaxAmplification: *maxAmp, Response: *response, MaxAttempts: *maxAttempts,
				})
				if err != nil {
					return err
				}
				var cmp *tune.Comparison
				if *verify != "" {
					sc, err := loadScenario(*verify, *sets)
					if err != nil {
						return err
					}
					cmp, err = tune.Verify(ctx, sc, plan, simRunner())
					if err != nil {
						return err
					}
				}
				if *out != "" {
					if _, err := plan.Save(*out); err != nil {
						return err
					}
					if cmp != nil {
						if err := metrics.WriteFileAtomic(filepath.Join(*out, "verify.txt"), cmp.WriteText); err != nil {
							return err
						}
					}
				}
				if *format == "json" {
					enc := json.NewEncoder(w)
					enc.SetIndent("", "  ")
					return enc.Encode(struct {
						Plan   *tune.Plan       `json:"plan"`
						Verify *tune.Comparison `json:"verify,omitempty"`
					}{plan, cmp})
				}
				if err := plan.WriteText(w); err != nil {
					return err
				}
				if cmp != nil {
					fmt.Fprintln(w)
					if err := cmp.WriteText(w); err != nil {
						return err
					}
				}
				if *out != "" {
					fmt.Fprintf(w, "\nwrote %s\n", *out)
				}
				return nil
			}
		},
	})
}

// parsePercentile reads "p99.9", "99.9" or "99.9%" as the quantile 0.999.
func parsePercentile(s string) (float64, error) {
	t := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "p"), "%")
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0 && v < 100) {
		return 0, fmt.Errorf("want a percentile such as p99.9 (between 0 and 100), got %q", s)
	}
	return v / 100, nil
}
