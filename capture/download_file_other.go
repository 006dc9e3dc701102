//go:build !unix

package capture

import (
	"errors"
	"os"
)

// openRegular opens a downloaded file for reading, refusing anything but a regular file.
func openRegular(path string) (*os.File, error) {
	if fi, err := os.Lstat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return os.Open(path)
}
