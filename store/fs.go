package store

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/gofrs/flock"
)

// fsys is every file-system operation the store performs, so that tests can
// inject an error at any step (a full disk, a read-only directory) without
// needing a real one. osFS is the implementation used outside tests.
type fsys interface {
	mkdirAll(path string, perm os.FileMode) error
	stat(path string) (os.FileInfo, error)
	// writable returns an error if the process may not create files in dir.
	writable(dir string) error
	// lock opens (creating it with mode 0600) and flocks path, and writes
	// the PID into it. If another open file holds the lock, it returns a
	// *heldError.
	lock(path string) (io.Closer, error)
	// readFile reads at most limit bytes of path.
	readFile(path string, limit int64) ([]byte, error)
	// create truncates or creates path for writing.
	create(path string, perm os.FileMode) (file, error)
	rename(oldpath, newpath string) error
	remove(path string) error
	// syncDir fsyncs the directory dir.
	syncDir(dir string) error
}

// file is an open file being written.
type file interface {
	io.Writer
	Sync() error
	Close() error
}

// heldError says the lock is held by another open file, by the process
// whose PID the lock file holds (0 if unknown).
type heldError struct{ pid int }

func (e *heldError) Error() string { return "lock held" }

type osFS struct{}

func (osFS) mkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) stat(path string) (os.FileInfo, error)        { return os.Stat(path) }
func (osFS) rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) remove(path string) error                     { return os.Remove(path) }

func (osFS) create(path string, perm os.FileMode) (file, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
}

// writable uses access(2), which honours a read-only mount and the
// directory's mode (though root passes the mode check: only a read-only
// mount stops root).
func (osFS) writable(dir string) error {
	const wOK, xOK = 0x2, 0x1
	if err := syscall.Access(dir, wOK|xOK); err != nil {
		return &os.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}

func (osFS) readFile(path string, limit int64) ([]byte, error) { return readFileLimit(path, limit) }

// readFileLimit reads at most limit bytes of path.
func readFileLimit(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

func (osFS) syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// lock takes the flock with gofrs/flock, which opens the file through
// os.OpenFile (O_CLOEXEC: hook commands do not inherit the lock), creating
// it with mode 0600, and retries read-write where flock(2) is emulated
// over fcntl (NFS). The PID written into the file is only informative (the
// flock is what counts), so it is written through a second descriptor and
// not fsynced; closing that descriptor keeps the flock, which belongs to
// the first one.
func (osFS) lock(path string) (io.Closer, error) {
	l := flock.New(path, flock.SetPermissions(0o600))
	locked, err := l.TryLock()
	if err != nil {
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			return nil, err // opening the file failed
		}
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	if !locked {
		b, _ := readFileLimit(path, 32)
		pid, _ := strconv.Atoi(string(bytes.TrimSpace(b)))
		return nil, &heldError{pid: pid}
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
