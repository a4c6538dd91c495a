package inputfile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.yaml")
	if err := os.WriteFile(small, []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(strings.Repeat("secret\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	for _, c := range []struct {
		path  string
		limit int64
		want  string // "" for success
		is    error
	}{
		{small, 100, "", nil},
		{small, 8, "", nil},
		{small, 7, "small.yaml: too large: 8 bytes, the limit is 7 bytes", ErrTooLarge},
		{big, 1 << 10, "big.yaml: too large: 1.4 KiB, the limit is 1 KiB", ErrTooLarge},
		{dir, 1 << 20, "not a regular file: it is a directory", ErrNotRegular},
		{fifo, 1 << 20, "fifo: not a regular file: it is a named pipe (FIFO)", ErrNotRegular},
		{sock, 1 << 20, "sock: not a regular file: it is a socket", ErrNotRegular},
		{"/dev/zero", 1 << 20, "/dev/zero: not a regular file: it is a device", ErrNotRegular},
		{filepath.Join(dir, "missing"), 1 << 20, "no such file", fs.ErrNotExist},
	} {
		done := make(chan struct{})
		var b []byte
		var err error
		go func() {
			defer close(done)
			b, err = Read(c.path, c.limit)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Read(%s) blocked", c.path)
		}
		if c.want == "" {
			if err != nil || string(b) != "name: x\n" {
				t.Errorf("Read(%s, %d) = %q, %v", c.path, c.limit, b, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.is) {
			t.Errorf("Read(%s, %d): error %v, want %q wrapping %v", c.path, c.limit, err, c.want, c.is)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Read(%s): error quotes the content: %v", c.path, err)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 64 << 20: "64 MiB", 1 << 30: "1 GiB", 3<<30 + 1: "3072 MiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
