package driver

import (
	"errors"
	"testing"
)

// TestCheckLoopbackRefusesEverythingElse lists the addresses serve and load
// accept without --allow-remote: the loopback interface, and nothing that
// merely looks like it.
func TestCheckLoopbackRefusesEverythingElse(t *testing.T) {
	for _, c := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:8080", true},
		{"127.0.0.1", true},
		{"127.9.9.9:1", true},
		{"[::1]:80", true},
		{"::1", true},
		{"localhost:9000", true},
		{"[::ffff:127.0.0.1]:80", true},
		{":8080", false}, // every interface
		{"", false},
		{"0.0.0.0:0", false},
		{"[::]:0", false},
		{"10.0.0.1:80", false},
		{"192.0.2.1", false},
		{"example.com:80", false},
		{"localhost.example.com:80", false},
		{"127.0.0.1.nip.io:80", false},
		{"[fe80::1%lo]:80", false},
	} {
		err := CheckLoopback(c.host)
		if c.ok && err != nil {
			t.Errorf("CheckLoopback(%q) = %v, want nil", c.host, err)
		}
		if !c.ok && !errors.Is(err, ErrRemote) {
			t.Errorf("CheckLoopback(%q) = %v, want ErrRemote", c.host, err)
		}
	}
}
