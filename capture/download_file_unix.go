//go:build unix

package capture

import (
	"errors"
	"os"
	"syscall"
)

// openRegular opens a downloaded file for reading, refusing anything but a regular file with
// one link: the download directory belongs to Chromium's user, and a browser taken over by a
// page must not make the worker read another file (a symbolic or hard link to one of the
// worker's) or block on a FIFO.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// checkRegular refuses an open file that is not a regular file with one link.
func checkRegular(f *os.File) error {
	fi, err := f.Stat()
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink != 1 {
		return errors.New("a file with more than one link")
	}
	return nil
}
