package benchaddr

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestWaitReturnsTheAddressThatAnswers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "addr")
	if err := Write(path, "127.0.0.1:4242"); err != nil {
		t.Fatal(err)
	}
	tries := 0
	addr, err := Wait(path, 5*time.Second, func(a string) error {
		if tries++; tries < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || addr != "127.0.0.1:4242" || tries != 3 {
		t.Errorf("Wait = %q, %v after %d checks; want the address after 3", addr, err, tries)
	}
}

func TestWaitFailsWithoutAnAnswer(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		write bool
		check func(string) error
	}{
		"no file":      {false, func(string) error { return nil }},
		"wrong answer": {true, func(string) error { return errors.New("not the echo") }},
	} {
		path := filepath.Join(dir, name)
		if tc.write {
			if err := Write(path, "127.0.0.1:1"); err != nil {
				t.Fatal(err)
			}
		}
		if addr, err := Wait(path, 100*time.Millisecond, tc.check); err == nil {
			t.Errorf("%s: Wait = %q with no error", name, addr)
		}
	}
}
