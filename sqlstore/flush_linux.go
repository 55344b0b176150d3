package sqlstore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// newDatasync is the flusher's flush on Linux, below.
var newDatasync = aioDatasync

// aioDatasync returns two functions that flush f's data to stable
// storage, and of its metadata what reading the data back needs, as
// SQLite's own flush of the WAL does on Linux (fdatasync(2)): sync, which
// holds no thread while it waits, and plain, which calls fdatasync; and
// one that releases what they hold.
//
// It asks the kernel for the flush through Linux AIO (io_submit(2) of an
// IOCB_CMD_FDSYNC, which runs the same fdatasync on a kernel worker) and
// waits for the answer on an eventfd, which Go's network poller watches,
// so that the goroutine waiting holds no thread and no P. A plain
// fdatasync blocks its thread, and Go hands that thread's P to another
// only once sysmon sees the call has lasted (20 µs to 10 ms): with
// GOMAXPROCS=1, a loop of fdatasyncs of 0.24 ms each left another
// goroutine 47 % of its CPU. Measured with the binary on one core, 32
// connections and scripts/loopback-bench.sh (3 interleaved rounds), the
// flusher with plain fdatasync made 0.94 times the creates/s of SQLite
// flushing inside COMMIT, with AIO 1.245 times. Where AIO is refused (a
// kernel without it, a seccomp filter), it falls back to fdatasync.
//
// Linux AIO has no wrapper in the standard library or golang.org/x/sys,
// hence the few lines of structures and raw system calls below.
func aioDatasync(f *os.File) (sync, plain func() error, release func()) {
	fd := int(f.Fd())
	plain = func() error { return syscall.Fdatasync(fd) }
	a, err := newAIO()
	if err != nil {
		return plain, plain, func() {}
	}
	// One flush shows whether this kernel and filesystem take it.
	if err := a.fdatasync(fd); err != nil {
		a.close()
		return plain, plain, func() {}
	}
	return func() error { return a.fdatasync(fd) }, plain, a.close
}

// An iocb is Linux's struct iocb (include/uapi/linux/aio_abi.h), in the
// field order of a little-endian machine.
type iocb struct {
	_      uint64 // aio_data
	_      uint32 // aio_key
	_      uint32 // aio_rw_flags
	opcode uint16
	_      int16 // aio_reqprio
	fildes uint32
	_      [4]uint64 // aio_buf, aio_nbytes, aio_offset, aio_reserved2
	flags  uint32
	resfd  uint32
}

// An ioEvent is Linux's struct io_event.
type ioEvent struct {
	data, obj uint64
	res, res2 int64
}

const (
	iocbCmdFdsync = 3 // IOCB_CMD_FDSYNC
	iocbFlagResfd = 1 // IOCB_FLAG_RESFD: signal the eventfd in resfd
)

// An aio is an AIO context with an eventfd that tells of its completions.
type aio struct {
	ctx uintptr
	efd *os.File // non-blocking: reads park on Go's poller
}

func newAIO() (*aio, error) {
	if !littleEndian() {
		return nil, errors.New("sqlstore: AIO structures are laid out for little-endian machines")
	}
	var ctx uintptr
	if _, _, e := syscall.Syscall(syscall.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&ctx)), 0); e != 0 {
		return nil, fmt.Errorf("sqlstore: io_setup: %w", e)
	}
	fd, _, e := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if e != 0 {
		syscall.Syscall(syscall.SYS_IO_DESTROY, ctx, 0, 0)
		return nil, fmt.Errorf("sqlstore: eventfd: %w", e)
	}
	return &aio{ctx: ctx, efd: os.NewFile(fd, "eventfd")}, nil
}

// fdatasync flushes fd as fdatasync(2) does, and waits for it without
// holding a thread. One call at a time.
func (a *aio) fdatasync(fd int) error {
	cb := iocb{opcode: iocbCmdFdsync, fildes: uint32(fd), flags: iocbFlagResfd, resfd: uint32(a.efd.Fd())}
	p := &cb
	if _, _, e := syscall.Syscall(syscall.SYS_IO_SUBMIT, a.ctx, 1, uintptr(unsafe.Pointer(&p))); e != 0 {
		return fmt.Errorf("sqlstore: io_submit: %w", e)
	}
	var b [8]byte
	if _, err := a.efd.Read(b[:]); err != nil {
		return fmt.Errorf("sqlstore: read the AIO eventfd: %w", err)
	}
	var ev ioEvent
	for {
		n, _, e := syscall.Syscall6(syscall.SYS_IO_GETEVENTS, a.ctx, 1, 1, uintptr(unsafe.Pointer(&ev)), 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return fmt.Errorf("sqlstore: io_getevents: %w", e)
		}
		if n != 1 {
			return errors.New("sqlstore: io_getevents: no completion after its eventfd fired")
		}
		break
	}
	if ev.res < 0 {
		return fmt.Errorf("sqlstore: fdatasync: %w", syscall.Errno(-ev.res))
	}
	return nil
}

func (a *aio) close() {
	a.efd.Close()
	syscall.Syscall(syscall.SYS_IO_DESTROY, a.ctx, 0, 0)
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
