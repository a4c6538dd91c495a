package main

import "testing"

func TestFormatCPU(t *testing.T) {
	for _, tc := range []struct {
		text    string
		n       int64
		want    string
		wantErr bool
	}{
		{"1.20 0.30\n", 100000, "cpu 15.0 µs/req  ", false},
		{"0.00 0.00", 5, "cpu 0.0 µs/req  ", false},
		{"1.5 0.5", 0, "cpu - µs/req  ", false},
		{"Command exited with non-zero status 1\n0.1 0.2\n", 10, "", true},
		{"", 10, "", true},
	} {
		got, err := formatCPU(tc.text, tc.n)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("formatCPU(%q, %d) = %q, %v; want %q, error %v", tc.text, tc.n, got, err, tc.want, tc.wantErr)
		}
	}
}
