package traces

import "testing"

// TestGRPCStatusOf: a span's gRPC code is read from the older
// rpc.grpc.status_code (a number) or the current rpc.response.status_code
// (the canonical name otelgrpc writes, or a number), the older first.
func TestGRPCStatusOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		attrs map[string]any
		code  int
		ok    bool
	}{
		{"older, a number", map[string]any{"rpc.grpc.status_code": int64(14)}, 14, true},
		{"current, a name", map[string]any{"rpc.response.status_code": "UNAVAILABLE"}, 14, true},
		{"current, lower case", map[string]any{"rpc.response.status_code": "deadline_exceeded"}, 4, true},
		{"current, OK", map[string]any{"rpc.response.status_code": "OK"}, 0, true},
		{"current, a number", map[string]any{"rpc.response.status_code": "8"}, 8, true},
		{"both: the older wins", map[string]any{"rpc.grpc.status_code": int64(1), "rpc.response.status_code": "INTERNAL"}, 1, true},
		{"an unknown name", map[string]any{"rpc.response.status_code": "SLOW"}, 0, false},
		{"none", map[string]any{"http.response.status_code": int64(503)}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ok := grpcStatusOf(func(k string) (any, bool) { v, ok := tc.attrs[k]; return v, ok })
			if code != tc.code || ok != tc.ok {
				t.Errorf("got %d, %v; want %d, %v", code, ok, tc.code, tc.ok)
			}
		})
	}
}
