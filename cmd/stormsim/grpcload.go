package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/serve"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// grpcLoadFlags are load's gRPC flags: the protocol of a scenario run,
// the request message of a grpc:// target, and grpc-go's own retry.
type grpcLoadFlags struct {
	protocol      string
	data          string
	dataFile      string
	protoset      string
	serviceConfig string
	native        bool
}

func (g *grpcLoadFlags) declare(fs *pflag.FlagSet) {
	fs.StringVar(&g.protocol, "protocol", serve.ProtocolHTTP, "SCENARIO mode: what the services speak and the driver sends: http or grpc")
	fs.StringVar(&g.data, "data", "", "grpc:// target: the request message as JSON, encoded through --protoset or server reflection")
	fs.StringVar(&g.dataFile, "data-file", "", "grpc:// target: read --data from `FILE`")
	fs.StringVar(&g.protoset, "protoset", "", "grpc:// target: describe the method with this FileDescriptorSet `FILE` (protoc --descriptor_set_out, buf build -o) instead of server reflection")
	fs.StringVar(&g.serviceConfig, "grpc-service-config", "", "grpc:// target: let grpc-go's own retry, hedging and throttling run from this service config `FILE` (JSON); --policy then neither retries nor hedges")
	fs.BoolVar(&g.native, "grpc-native-retry", false, "SCENARIO mode with --protocol grpc: the client retries with grpc-go's own retry and throttling from workload.client.grpc_service_config; prints attempts and goodput beside the simulator's")
}

// target applies the flags to a run against --target.
func (g *grpcLoadFlags) target(ctx context.Context, fs *pflag.FlagSet, opt *driver.Options) error {
	usage := func(format string, args ...any) error { return &exitError{exitUsage, fmt.Errorf(format, args...)} }
	for _, name := range []string{"protocol", "grpc-native-retry"} {
		if fs.Changed(name) {
			return usage("--%s applies to SCENARIO mode: a --target's scheme names its protocol", name)
		}
	}
	if !strings.HasPrefix(opt.Target, "grpc://") {
		for _, name := range []string{"data", "data-file", "protoset", "grpc-service-config"} {
			if fs.Changed(name) {
				return usage("--%s applies to grpc:// targets (use --body for HTTP)", name)
			}
		}
		return nil
	}
	if fs.Changed("method") {
		return usage("--method: a grpc:// target names its method in the URL (grpc://HOST:PORT/pkg.Service/Method)")
	}
	if g.data != "" && g.dataFile != "" {
		return usage("--data and --data-file: give one")
	}
	if (g.data != "" || g.dataFile != "") && fs.Changed("body") {
		return usage("--body is the encoded message; --data is its JSON: give one")
	}
	data := []byte(g.data)
	if g.dataFile != "" {
		var err error
		if data, err = inputfile.Read(g.dataFile, maxBodyFile); err != nil {
			return fmt.Errorf("--data-file: %w", err)
		}
	}
	var set []byte
	if g.protoset != "" {
		var err error
		if set, err = inputfile.Read(g.protoset, maxBodyFile); err != nil {
			return fmt.Errorf("--protoset: %w", err)
		}
	}
	if len(data) > 0 || set != nil {
		b, err := transport.EncodeGRPCRequest(ctx, opt.Target, data, set)
		if err != nil {
			what := "--data"
			if g.dataFile != "" {
				what = "--data-file " + g.dataFile
			}
			return fmt.Errorf("%s: %w", what, err)
		}
		opt.Body = b
	}
	if g.serviceConfig != "" {
		b, err := inputfile.Read(g.serviceConfig, topology.MaxFileSize)
		if err != nil {
			return fmt.Errorf("--grpc-service-config: %w", err)
		}
		if err := transport.CheckGRPCServiceConfig(g.serviceConfig, string(b)); err != nil {
			return fmt.Errorf("--grpc-service-config: %w", err)
		}
		opt.GRPCServiceConfig = string(b)
		opt.Policy = serve.NativeGRPCPolicy(opt.Policy)
	}
	return nil
}

// scenario applies the flags to a SCENARIO run.
func (g *grpcLoadFlags) scenario(sc *topology.Scenario, opt *serve.ScenarioOptions) error {
	if g.protocol != serve.ProtocolHTTP && g.protocol != serve.ProtocolGRPC {
		return &exitError{exitUsage, fmt.Errorf("--protocol: want http or grpc, got %q", g.protocol)}
	}
	opt.Protocol = g.protocol
	if !g.native {
		return nil
	}
	if g.protocol != serve.ProtocolGRPC {
		return &exitError{exitUsage, errors.New("--grpc-native-retry needs --protocol grpc")}
	}
	cfg, err := serve.ClientServiceConfig(sc)
	if err != nil {
		return err
	}
	opt.GRPCServiceConfig = cfg
	return nil
}

// compareNative, after a --grpc-native-retry run, simulates the scenario
// (whose client policy is the simulator's reading of the same service
// config) and prints attempts and goodput side by side: the end-to-end
// check of that reading against grpc-go. In JSON format the table goes to
// stderr, leaving stdout one JSON document.
func (g *grpcLoadFlags) compareNative(ctx context.Context, sc *topology.Scenario, res *metrics.Result, w io.Writer, format string) error {
	if !g.native {
		return nil
	}
	simRes, err := sim.Run(ctx, sc, sim.Options{Version: version})
	if err != nil {
		return fmt.Errorf("simulating for the comparison: %w", err)
	}
	if format != "text" {
		w = os.Stderr
	}
	writeNativeComparison(w, res.Summary, simRes.Summary)
	return nil
}

// writeNativeComparison prints a run with grpc-go's retry beside the
// simulation of the same scenario.
func writeNativeComparison(w io.Writer, real, simd metrics.Summary) {
	fmt.Fprintf(w, "\ngrpc-go's own retry vs the simulator's reading of %s\n", "workload.client.grpc_service_config")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tgrpc-go\tsimulated\t")
	fmt.Fprintf(tw, "goodput (req/s)\t%.2f\t%.2f\t\n", real.GoodputRPS, simd.GoodputRPS)
	fmt.Fprintf(tw, "succeeded\t%d\t%d\t\n", real.Requests.Succeeded, simd.Requests.Succeeded)
	for _, s := range simd.Services {
		for _, r := range real.Services {
			if r.Name == s.Name {
				fmt.Fprintf(tw, "attempts at %s\t%d\t%d\t\n", s.Name, r.Attempts, s.Attempts)
			}
		}
	}
	tw.Flush()
}
