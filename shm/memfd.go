package shm

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Mem is shared memory outside the job segment (a window's memory): an
// anonymous memfd mapped MAP_SHARED. It has no name in any file system,
// so nothing can leak however its processes end: the kernel frees it
// when the last descriptor and mapping are gone. One process creates it
// (NewMem); the others open it through the creator's descriptor table
// (OpenMem) while the creator keeps it open.
type Mem struct {
	B  []byte
	fd int
}

// NewMem creates and maps size bytes of zeroed shared memory.
func NewMem(size int) (*Mem, error) {
	if size <= 0 {
		size = PageSize
	}
	fd, err := unix.MemfdCreate("shmpi-win", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("shm: memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: ftruncate memfd to %d bytes: %w", size, err)
	}
	return mapMem(fd, size)
}

// OpenMem maps the memory that process pid created with NewMem and holds
// as descriptor fd.
func OpenMem(pid, fd, size int) (*Mem, error) {
	if size <= 0 {
		size = PageSize
	}
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: open window memory of process %d: %w", pid, err)
	}
	nfd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("shm: dup: %w", err)
	}
	unix.CloseOnExec(nfd)
	return mapMem(nfd, size)
}

func mapMem(fd, size int) (*Mem, error) {
	b, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: mmap %d bytes of window memory: %w", size, err)
	}
	return &Mem{B: b, fd: fd}, nil
}

// FD is the descriptor that other processes open (OpenMem).
func (m *Mem) FD() int { return m.fd }

// CloseFD closes the descriptor; the mapping stays.
func (m *Mem) CloseFD() {
	if m.fd >= 0 {
		unix.Close(m.fd)
		m.fd = -1
	}
}

// Close unmaps the memory and closes the descriptor.
func (m *Mem) Close() error {
	m.CloseFD()
	if m.B == nil {
		return nil
	}
	err := unix.Munmap(m.B)
	m.B = nil
	return err
}
