package sqlstore

import (
	"testing"
	"unsafe"
)

// TestAIOLayout checks the structures handed to the kernel against the
// sizes of include/uapi/linux/aio_abi.h.
func TestAIOLayout(t *testing.T) {
	if n := unsafe.Sizeof(iocb{}); n != 64 {
		t.Errorf("iocb is %d bytes, want 64", n)
	}
	if n := unsafe.Offsetof(iocb{}.fildes); n != 20 {
		t.Errorf("iocb.fildes at %d, want 20", n)
	}
	if n := unsafe.Offsetof(iocb{}.flags); n != 56 {
		t.Errorf("iocb.flags at %d, want 56", n)
	}
	if n := unsafe.Sizeof(ioEvent{}); n != 32 {
		t.Errorf("io_event is %d bytes, want 32", n)
	}
}
