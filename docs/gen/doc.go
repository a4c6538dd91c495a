// Command gen regenerates the figures and tables of stormsim's documentation
// from the code, so the docs cannot drift from what the simulator does:
//
//	go run ./docs/gen            rewrite docs/ in place
//	go run ./docs/gen -check     regenerate in memory and fail if docs/ is stale
//	go run ./docs/gen -only cli  one part only: experiments, validation or cli
//
// It writes
//
//   - docs/experiments/img/*.png: the plots of every canned experiment;
//   - the block between "<!-- gen:results -->" and "<!-- /gen:results -->"
//     of each docs/experiments/NAME.md: the table of our result against the
//     published one, with the plots (a page that does not exist yet is
//     created from the experiment's header comment);
//   - docs/validation.md: the queueing-theory table (theory against
//     simulation, with 95 % confidence intervals from batch means);
//   - docs/cli.md: the output of `stormsim help` and `stormsim help CMD`,
//     captured by building and running the command.
//
// Everything is a deterministic function of the code and the seeds in the
// scenarios: PNGs are compared by SHA-256, markdown byte for byte. Runs are
// shortened where the statistics allow; every number in the docs says how
// many runs or requests it rests on.
//
// Files are written atomically (temporary file and rename). The generator
// runs simulations in parallel goroutines, one per CPU.
package main
