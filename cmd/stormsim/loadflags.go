package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// loadExtras are the flags of `load --target` that shape write traffic
// (a key per intent, a tenant) and the vegeta/hey-style shortcuts (a quick
// policy, targets on stdin, a results file).
type loadExtras struct {
	keyHeader    string
	keyPrefix    string
	noKey        bool
	tenant       string
	tenantHeader string

	timeout    time.Duration
	retries    int
	retryOn    []string
	maxWorkers int
	output     string
}

// declare adds the flags to fs.
func (x *loadExtras) declare(fs *pflag.FlagSet) {
	fs.StringVar(&x.keyHeader, "key-header", transport.HeaderIdempotencyKey, "header carrying each logical request's idempotency key, one per intent and the same on all its retries and hedges (sent with a write --method, or when any key flag is given)")
	fs.StringVar(&x.keyPrefix, "key-prefix", "", "start every key with this (default: a random prefix per run); the key is the prefix then the request's number")
	fs.BoolVar(&x.noKey, "no-key", false, "send no idempotency key at all")
	fs.StringVar(&x.tenant, "tenant", "", "send this tenant with every request, in --tenant-header")
	fs.StringVar(&x.tenantHeader, "tenant-header", driver.DefaultTenantHeader, "header carrying --tenant")
	fs.DurationVar(&x.timeout, "timeout", 0, "quick policy: each attempt's timeout (instead of a --policy file)")
	fs.IntVar(&x.retries, "retries", 0, "quick policy: retries after the first attempt (instead of a --policy file)")
	fs.StringSliceVar(&x.retryOn, "retry-on", nil, "quick policy: the outcome `classes` retried: unavailable, timeout, error, in_progress, not_sent (default unavailable,timeout)")
	fs.IntVar(&x.maxWorkers, "max-workers", 0, "vegeta's name for --workers: the bound on logical requests in flight")
	fs.StringVar(&x.output, "output", "", "write every attempt to `FILE` as vegeta JSON results (what 'vegeta encode --to json' writes; 'tune vegeta:FILE' reads it)")
}

// loadExtraFlags are the flags above that only a --target run takes.
var loadExtraFlags = []string{"key-header", "key-prefix", "no-key", "tenant", "tenant-header", "timeout", "retries", "retry-on", "output"}

// rateValue is --rate: logical requests per second, written as a number
// (300), per second (300/s) or per any duration (1000/1m, 5/100ms).
type rateValue float64

func (r *rateValue) String() string { return strconv.FormatFloat(float64(*r), 'g', -1, 64) }
func (r *rateValue) Type() string   { return "rate" }

func (r *rateValue) Set(s string) error {
	v, err := parseRate(s)
	if err != nil {
		return err
	}
	*r = rateValue(v)
	return nil
}

// parseRate parses a rate as --rate takes it.
func parseRate(s string) (float64, error) {
	num, per, hasPer := strings.Cut(strings.TrimSpace(s), "/")
	// A rate ≤ 0 parses, to be refused where the run is set up, as it always was.
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(n) || math.Abs(n) > 1e9 {
		return 0, fmt.Errorf("want a rate such as 300, 300/s or 1000/1m")
	}
	if !hasPer {
		return n, nil
	}
	per = strings.TrimSpace(per)
	if per != "" && (per[0] < '0' || per[0] > '9') && per[0] != '.' {
		per = "1" + per // "s" is "1s"
	}
	d, err := time.ParseDuration(per)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: want a unit or a duration after the '/', such as 300/s or 1000/1m", s)
	}
	return n / d.Seconds(), nil
}

// applyWorkers makes --max-workers set --workers.
func (x *loadExtras) applyWorkers(fs *pflag.FlagSet, workers *int) error {
	if !fs.Changed("max-workers") {
		return nil
	}
	if x.maxWorkers <= 0 {
		return fmt.Errorf("--max-workers: must be > 0, got %d", x.maxWorkers)
	}
	if fs.Changed("workers") && *workers != x.maxWorkers {
		return fmt.Errorf("--max-workers %d and --workers %d: give one of them", x.maxWorkers, *workers)
	}
	*workers = x.maxWorkers
	return nil
}

// quickPolicy returns the call policy --timeout, --retries and --retry-on
// describe, read as a policy file with those keys would be (same defaults,
// same checks); ok is false when none of them is given.
func (x *loadExtras) quickPolicy(fs *pflag.FlagSet, policyFile string) (call topology.Call, ok bool, err error) {
	given := []string{}
	for _, name := range []string{"timeout", "retries", "retry-on"} {
		if fs.Changed(name) {
			given = append(given, "--"+name)
		}
	}
	if len(given) == 0 {
		return topology.Call{}, false, nil
	}
	if policyFile != "" {
		return topology.Call{}, false, fmt.Errorf("%s: not with --policy (write it in %s: timeout, retry.max_attempts, retry.on)", given[0], policyFile)
	}
	var y strings.Builder
	if fs.Changed("timeout") {
		if x.timeout <= 0 {
			return topology.Call{}, false, fmt.Errorf("--timeout: must be > 0, got %v", x.timeout)
		}
		fmt.Fprintf(&y, "timeout: %s\n", x.timeout)
	}
	if fs.Changed("retry-on") && !fs.Changed("retries") {
		return topology.Call{}, false, errors.New("--retry-on: give --retries too (how many)")
	}
	if fs.Changed("retries") {
		if x.retries < 0 || x.retries > 100 {
			return topology.Call{}, false, fmt.Errorf("--retries: must be in 0..100, got %d", x.retries)
		}
		fmt.Fprintf(&y, "retry:\n  max_attempts: %d\n", x.retries+1)
		if len(x.retryOn) > 0 {
			y.WriteString("  on: [")
			for i, c := range x.retryOn {
				var rc policies.RetryClass
				if err := rc.UnmarshalText([]byte(strings.TrimSpace(c))); err != nil {
					return topology.Call{}, false, fmt.Errorf("--retry-on: %w", err)
				}
				if i > 0 {
					y.WriteString(", ")
				}
				y.WriteString(string(rc))
			}
			y.WriteString("]\n")
		}
	}
	call, err = topology.ParseCall("--timeout/--retries", []byte(y.String()))
	if err != nil {
		return topology.Call{}, false, err
	}
	return call, true, nil
}

// requestTemplate returns the per-intent request shape of a --target run:
// for a write method (anything but GET, HEAD and OPTIONS), or when a key or
// tenant flag is given; nil otherwise, which keeps the plain behaviour (the
// body sent as written, --idempotency-keys on drawn writes).
func (x *loadExtras) requestTemplate(fs *pflag.FlagSet, method string) (*driver.RequestTemplate, error) {
	// Each flag checked alone, so that the error names it.
	for _, f := range []struct {
		name string
		t    driver.RequestTemplate
	}{
		{"key-header", driver.RequestTemplate{KeyHeader: x.keyHeader, KeyPrefix: "k"}},
		{"key-prefix", driver.RequestTemplate{KeyPrefix: x.keyPrefix}},
		{"tenant", driver.RequestTemplate{Tenant: x.tenant}},
		{"tenant-header", driver.RequestTemplate{Tenant: "t", TenantHeader: x.tenantHeader}},
	} {
		if err := f.t.Validate(); err != nil {
			return nil, fmt.Errorf("--%s: %w", f.name, err)
		}
	}
	write := method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
	asked := false
	for _, name := range []string{"key-header", "key-prefix", "no-key", "tenant", "tenant-header"} {
		asked = asked || fs.Changed(name)
	}
	if !write && !asked {
		return nil, nil
	}
	return &driver.RequestTemplate{KeyHeader: x.keyHeader, KeyPrefix: x.keyPrefix, NoKey: x.noKey,
		Tenant: x.tenant, TenantHeader: x.tenantHeader}, nil
}

// stdinFile is where `load` reads targets from with --target - or when it
// is a pipe or a file and no target is named; tests replace it.
var stdinFile = os.Stdin

// maxTargetsInput bounds what is read of the targets on stdin.
const maxTargetsInput = 1 << 20

// stdinHasTargets reports whether stdin is a pipe or a regular file (not a
// terminal, not /dev/null, not closed), where targets may be waiting.
func stdinHasTargets() bool {
	if stdinFile == nil {
		return false
	}
	fi, err := stdinFile.Stat()
	return err == nil && (fi.Mode()&os.ModeNamedPipe != 0 || fi.Mode().IsRegular())
}

// readStdinTarget reads the run's target from stdin in vegeta's http
// format and puts it in c's flags: the URL, its method (unless --method was
// given too, which must then agree), its headers after -H's, its body file
// (unless --body was given). stormsim load drives one target per run.
func (c *loadCommand) readStdinTarget() error {
	if stdinFile == nil {
		return usageError("--target -: no standard input")
	}
	data, err := io.ReadAll(io.LimitReader(stdinFile, maxTargetsInput+1))
	if err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	if len(data) > maxTargetsInput {
		return fmt.Errorf("stdin: more than %d bytes of targets", maxTargetsInput)
	}
	ts, err := driver.ReadTargets(strings.NewReader(string(data)), "stdin")
	if err != nil {
		return err
	}
	if len(ts) > 1 {
		return usageError("stdin:%d: a second target: stormsim load drives one target per run (run one load per target, or describe several services in a scenario)", ts[1].Line)
	}
	tg := ts[0]
	if c.fs.Changed("method") && c.method != tg.Method {
		return usageError("--method %s disagrees with the target's %s on stdin:%d", c.method, tg.Method, tg.Line)
	}
	c.target, c.method = tg.URL, tg.Method
	for k, vs := range tg.Header {
		for _, v := range vs {
			c.headers = append(c.headers, k+": "+v)
		}
	}
	if tg.BodyFile != "" {
		if c.fs.Changed("body") {
			return usageError("--body and the body file @%s of stdin:%d: give one of them", tg.BodyFile, tg.Line)
		}
		c.body = "@" + tg.BodyFile
	}
	return nil
}

// runTarget runs the --target load, writing every attempt to --output as
// vegeta results when asked (atomically: the file appears complete, with
// what an interrupted run had sent).
func (c *loadCommand) runTarget(ctx context.Context, opt driver.Options) (*metrics.Result, error) {
	if c.x.output == "" {
		return driver.Run(ctx, opt)
	}
	var res *metrics.Result
	var runErr error
	err := metrics.WriteFileAtomic(c.x.output, func(w io.Writer) error {
		vw := driver.NewVegetaWriter(w, c.target)
		opt.OnAttempt = vw.Write
		if res, runErr = driver.Run(ctx, opt); runErr != nil {
			return runErr
		}
		return vw.Flush()
	})
	switch {
	case runErr != nil:
		return nil, runErr
	case err != nil:
		return nil, fmt.Errorf("--output: %w", err)
	}
	return res, nil
}

// usageError is a usage error (exit 2) with a formatted message.
func usageError(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}
