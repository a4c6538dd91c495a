package topology

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/paste"
	"github.com/stormsim/stormsim/policies"
)

// pasteConfigs lays the production configs a call names (grpc_service_config
// with grpc_method, envoy_route, envoy_cluster) onto its policy keys, before
// defaults and validation. A pasted config and the call's own key for the
// same policy conflict: the file is meant to be the whole truth. Problems
// in a pasted file name that file, its line and field.
func (v *validator) pasteConfigs(c *Call, path string) {
	if c.GRPCMethod != "" && c.GRPCServiceConfig == "" {
		v.add(path+".grpc_method", "needs grpc_service_config: it selects a methodConfig in it")
	}
	if c.GRPCServiceConfig != "" && c.EnvoyRoute != "" {
		v.add(path+".envoy_route", "a call's retries come from grpc_service_config or envoy_route, not both")
		return
	}
	if f := c.GRPCServiceConfig; f != "" {
		if data, file, ok := v.readPasted(f, path+".grpc_service_config"); ok {
			p, err := paste.GRPCServiceConfig(file, data, c.GRPCMethod)
			v.pasted(c, path, "grpc_service_config", p, err)
		}
	}
	if f := c.EnvoyRoute; f != "" {
		if data, file, ok := v.readPasted(f, path+".envoy_route"); ok {
			p, err := paste.EnvoyRoute(file, data)
			v.pasted(c, path, "envoy_route", p, err)
		}
	}
	v.pasteProxies(c, path)
	if f := c.EnvoyCluster; f != "" {
		if data, file, ok := v.readPasted(f, path+".envoy_cluster"); ok {
			p, err := paste.EnvoyCluster(file, data)
			v.pasted(c, path, "envoy_cluster", p, err)
		}
	}
}

// readPasted reads a pasted config named relative to the scenario file.
func (v *validator) readPasted(name, key string) ([]byte, string, bool) {
	file := name
	if !filepath.IsAbs(file) && v.sc.File != "" {
		file = filepath.Join(filepath.Dir(v.sc.File), file)
	}
	data, err := inputfile.Read(file, MaxFileSize)
	if err != nil {
		v.add(key, "%v", err)
		return nil, "", false
	}
	return data, file, true
}

// pasted applies what one pasted file sets, or reports its problems.
func (v *validator) pasted(c *Call, path, key string, p paste.Policies, err error) {
	if err != nil {
		var ps paste.Problems
		if !errors.As(err, &ps) {
			v.add(path+"."+key, "%v", err)
			return
		}
		for _, q := range ps {
			msg := q.Msg
			if q.Field != "" {
				msg = q.Field + ": " + msg
			}
			v.probs = append(v.probs, Problem{File: q.File, Line: q.Line, Path: path + "." + key, Msg: msg})
		}
		return
	}
	set := func(k string) bool {
		if v.givenUnder(path + "." + k) {
			v.add(path+"."+k, "set by %s too: keep one", key)
			return false
		}
		return true
	}
	if p.Retried && set("retry") {
		c.Retry = p.Retry
		if p.HoldMethods != nil {
			// The proxy holds writes by method; the workload says which.
			c.Retry.HoldWrites = slices.Contains(p.HoldMethods, v.sc.Workload.WriteMethod)
		}
	}
	if p.Hedge != nil && set("hedge") {
		c.Hedge = p.Hedge
	}
	if p.Budget != nil && set("budget") {
		c.Budget = p.Budget
	}
	if p.Timeout > 0 && set("timeout") {
		c.Timeout = p.Timeout
	}
	if p.Balance != "" && set("balance") {
		c.Balance = Balance(p.Balance)
	}
	if o := p.Outlier; o != nil && set("outlier_detection") {
		c.OutlierDetection = &OutlierDetection{ConsecutiveFailures: o.ConsecutiveFailures, Interval: o.Interval,
			BaseEjectionTime: o.BaseEjectionTime, MaxEjectionTime: o.MaxEjectionTime, MaxEjectionPercent: o.MaxEjectionPercent}
	}
	if p.ConnectTimeout > 0 && set("connect_timeout") {
		c.ConnectTimeout = p.ConnectTimeout
	}
	if p.MaxConn > 0 && set("pool") {
		c.Pool = &Pool{Size: p.MaxConn}
		if p.QueueTimeout > 0 && set("queue_timeout") {
			c.QueueTimeout = p.QueueTimeout
		}
	}
	if p.Note != "" {
		v.sc.notes = append(v.sc.notes, "note: "+p.Note)
	}
	if p.HonorPushback && set("honor_pushback") {
		c.HonorPushback = true
		if p.MaxPushback > 0 && set("max_pushback") {
			c.MaxPushback = p.MaxPushback
		}
	}
}

// givenUnder reports whether path or any key below it was written.
func (v *validator) givenUnder(path string) bool {
	for k := range v.d.given {
		if k == path || strings.HasPrefix(k, path+".") || strings.HasPrefix(k, path+"[") {
			return true
		}
	}
	return false
}

// sendRateBlock validates a call's send_rate with fields named under it.
type sendRateBlock struct{ c *policies.RateLimitConfig }

func (s sendRateBlock) Validate() error {
	err := s.c.Validate()
	if fe, ok := errors.AsType[*policies.FieldError](err); ok {
		return &policies.FieldError{Field: "send_rate." + fe.Field, Err: fe.Err}
	}
	return err
}
