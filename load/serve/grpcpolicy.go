package serve

import (
	"fmt"
	"path/filepath"

	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// Protocols the emulated services speak and the driver sends.
const (
	ProtocolHTTP = "http"
	ProtocolGRPC = "grpc"
)

// NativeGRPCPolicy is the part of call policy c that stormsim still runs
// when grpc-go's own retry runs from a service config: one attempt, no
// attempt timeout (grpc-go bounds the whole call, retries included, by the
// deadline), and none of the retry, hedge or budget policy, which the
// service config's retryPolicy, hedgingPolicy and retryThrottling replace.
// Breaker, throttle, send rate and deadline propagation are kept.
func NativeGRPCPolicy(c topology.Call) topology.Call {
	c.Timeout = 0
	c.Retry = policies.RetryConfig{MaxAttempts: 1}
	c.Hedge = nil
	c.Budget = nil
	c.HonorPushback = false
	return c
}

// scenarioClientPolicy is the client policy a scenario run drives: the
// scenario's, or its native remainder with a service config.
func scenarioClientPolicy(sc *topology.Scenario, opt ScenarioOptions) (topology.Call, error) {
	if opt.GRPCServiceConfig == "" {
		return sc.Workload.Client, nil
	}
	if opt.Protocol != ProtocolGRPC {
		return topology.Call{}, fmt.Errorf("load: %s: a gRPC service config needs the grpc protocol", scenarioName(sc))
	}
	return NativeGRPCPolicy(sc.Workload.Client), nil
}

// ClientServiceConfig reads the gRPC service config the scenario's client
// names (workload.client.grpc_service_config, relative to the scenario
// file): what a run with grpc-go's own retry gives grpc-go, and what the
// simulator read the same policy from.
func ClientServiceConfig(sc *topology.Scenario) (string, error) {
	name := sc.Workload.Client.GRPCServiceConfig
	if name == "" {
		return "", fmt.Errorf("load: %s: workload.client.grpc_service_config: not set; grpc-go's own retry needs the service config to run from", scenarioName(sc))
	}
	file := name
	if !filepath.IsAbs(file) && sc.File != "" {
		file = filepath.Join(filepath.Dir(sc.File), file)
	}
	data, err := inputfile.Read(file, topology.MaxFileSize)
	if err != nil {
		return "", fmt.Errorf("load: %s: workload.client.grpc_service_config: %w", scenarioName(sc), err)
	}
	return string(data), nil
}
