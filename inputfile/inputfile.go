// Package inputfile reads the files a user names and the files the
// scenarios they run name in turn (sample files, policies, request bodies),
// which may have been written by someone else.
//
// Read checks what a path is before it opens it: a named pipe would block
// the open itself (and with it the first SIGTERM), and a device or a
// directory is no input; only regular files are read, and never more than a
// limit, so that /dev/zero or a multi-gigabyte file fails at once instead of
// exhausting memory. Errors name the path and what is wrong with it, and
// never quote the file's content.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrTooLarge is wrapped by Read's error when a file exceeds its limit.
var ErrTooLarge = errors.New("too large")

// ErrNotRegular is wrapped by Read's error when a path names a directory,
// a named pipe, a socket or a device.
var ErrNotRegular = errors.New("not a regular file")

// Read returns the content of the regular file at path, refusing any other
// kind of file before opening it and any file longer than limit bytes. A
// missing file gives an error that wraps fs.ErrNotExist.
func Read(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, st, limit); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should the path have become a named pipe since the
	// Stat, the open still returns at once, and the check below refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, st, limit); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w: it grew past %s while being read", path, ErrTooLarge, Size(limit))
	}
	return b, nil
}

// regular checks that st describes a regular file of at most limit bytes.
func regular(path string, st fs.FileInfo, limit int64) error {
	m := st.Mode()
	if !m.IsRegular() {
		what := "a special file"
		switch {
		case m.IsDir():
			what = "a directory"
		case m&fs.ModeNamedPipe != 0:
			what = "a named pipe (FIFO)"
		case m&fs.ModeSocket != 0:
			what = "a socket"
		case m&fs.ModeDevice != 0:
			what = "a device"
		}
		return fmt.Errorf("%s: %w: it is %s", path, ErrNotRegular, what)
	}
	if st.Size() > limit {
		return fmt.Errorf("%s: %w: %s, the limit is %s", path, ErrTooLarge, Size(st.Size()), Size(limit))
	}
	return nil
}

// Size formats a byte count for a message: 64 MiB, 1.5 KiB, 12 bytes.
func Size(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k && n%(k*k*k) == 0:
		return fmt.Sprintf("%d GiB", n/(k*k*k))
	case n >= k*k:
		return trim(float64(n)/(k*k)) + " MiB"
	case n >= k:
		return trim(float64(n)/k) + " KiB"
	}
	return fmt.Sprintf("%d bytes", n)
}

func trim(x float64) string {
	s := fmt.Sprintf("%.1f", x)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s
}
