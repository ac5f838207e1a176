package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dataLock holds a data directory for one apprun process: an exclusive
// flock on <data>/apprun.lock, which names the holder's pid. The kernel
// releases it when the process ends, however it ends.
type dataLock struct{ f *os.File }

// lockDataDir takes the directory, or says which process holds it.
func lockDataDir(dir string) (*dataLock, error) {
	path := filepath.Join(dir, "apprun.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "another process"
			if data, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); perr == nil {
					holder = fmt.Sprintf("another apprun (pid %d)", pid)
				}
			}
			return nil, fmt.Errorf("data directory %s is in use by %s: stop it, or give this one another --data (APPRUN_DATA)", dir, holder)
		}
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dataLock{f: f}, nil
}

// release gives the directory back.
func (l *dataLock) release() {
	if l != nil && l.f != nil {
		_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		_ = l.f.Close()
		l.f = nil
	}
}
