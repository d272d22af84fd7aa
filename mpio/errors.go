package mpio

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/shmpi/shmpi/ranks"
)

// Error classes of files (MPI's I/O error classes). Every error a call
// returns is a *ranks.Error whose Class is one of these or one of package
// ranks' (ErrArg, ErrType, ErrProcFailed, ErrRevoked...), so errors.Is
// works with both.
var (
	// ErrFile: an invalid file handle (nil, or closed). MPI_ERR_FILE.
	ErrFile = errors.New("invalid file handle")
	// ErrNoSuchFile: the file does not exist. MPI_ERR_NO_SUCH_FILE.
	ErrNoSuchFile = errors.New("no such file")
	// ErrAmode: an invalid access mode (Open), or a mode that forbids
	// the call. MPI_ERR_AMODE.
	ErrAmode = errors.New("invalid access mode")
	// ErrReadOnly: a read-only file system. MPI_ERR_READ_ONLY.
	ErrReadOnly = errors.New("read-only file or file system")
	// ErrAccess: permission denied, by the file system or by the access
	// mode (a write to a file opened ModeRdonly, a read of one opened
	// ModeWronly). MPI_ERR_ACCESS.
	ErrAccess = errors.New("permission denied")
	// ErrFileExists: ModeCreate|ModeExcl of a file that exists.
	// MPI_ERR_FILE_EXISTS.
	ErrFileExists = errors.New("file exists")
	// ErrFileInUse: the file is busy (a running executable). MPI_ERR_FILE_IN_USE.
	ErrFileInUse = errors.New("file in use")
	// ErrNoSpace: no space left on the device. MPI_ERR_NO_SPACE.
	ErrNoSpace = errors.New("no space left on device")
	// ErrQuota: disk quota exceeded. MPI_ERR_QUOTA.
	ErrQuota = errors.New("quota exceeded")
	// ErrBadFile: an invalid file name (empty, too long, a directory, a
	// path through something that is not a directory). MPI_ERR_BAD_FILE.
	ErrBadFile = errors.New("invalid file name")
	// ErrIO: any other I/O error. MPI_ERR_IO.
	ErrIO = errors.New("I/O error")
	// ErrNotSame: a collective call whose arguments must be the same at
	// every member were not (the name or mode of Open, the etype of
	// SetView...). MPI_ERR_NOT_SAME.
	ErrNotSame = errors.New("collective argument not the same at every member")
	// ErrUnsupportedOperation: a call the file's mode does not allow
	// (explicit offsets or the individual file pointer on a file opened
	// ModeSequential). MPI_ERR_UNSUPPORTED_OPERATION.
	ErrUnsupportedOperation = errors.New("unsupported operation")
)

// classes numbers the error classes that members tell each other in the
// collective calls (a code is an index here; 0 is no error), so that a
// member whose own arguments were fine can still report what went wrong
// at another.
var classes = []error{nil,
	ErrFile, ErrNoSuchFile, ErrAmode, ErrReadOnly, ErrAccess, ErrFileExists, ErrFileInUse,
	ErrNoSpace, ErrQuota, ErrBadFile, ErrIO, ErrNotSame, ErrUnsupportedOperation,
	ranks.ErrArg, ranks.ErrType, ranks.ErrCount, ranks.ErrBuffer, ranks.ErrRevoked, ranks.ErrProcFailed,
	ranks.ErrNoMem, ranks.ErrComm, ranks.ErrInfo, ranks.ErrOther,
}

// codeOf is err's class as a code for the other members.
func codeOf(err error) int64 {
	if err == nil {
		return 0
	}
	for i, c := range classes[1:] {
		if errors.Is(err, c) {
			return int64(i + 1)
		}
	}
	return codeOf(ranks.ErrOther)
}

// classOf is the class of a code from codeOf.
func classOf(code int64) error {
	if code <= 0 || code >= int64(len(classes)) {
		return ranks.ErrOther
	}
	return classes[code]
}

func errf(class error, op string, rank int, format string, a ...any) error {
	return &ranks.Error{Class: class, Op: op, Rank: rank, Detail: fmt.Sprintf(format, a...)}
}

// errnoClass is the class of a system call's error.
func errnoClass(err error) error {
	var en syscall.Errno
	if !errors.As(err, &en) {
		return ErrIO
	}
	switch en {
	case syscall.ENOENT:
		return ErrNoSuchFile
	case syscall.EEXIST:
		return ErrFileExists
	case syscall.EACCES, syscall.EPERM:
		return ErrAccess
	case syscall.EROFS:
		return ErrReadOnly
	case syscall.ENOSPC:
		return ErrNoSpace
	case syscall.EDQUOT:
		return ErrQuota
	case syscall.ENAMETOOLONG, syscall.ENOTDIR, syscall.EISDIR, syscall.ELOOP:
		return ErrBadFile
	case syscall.ETXTBSY, syscall.EBUSY:
		return ErrFileInUse
	case syscall.ENOMEM:
		return ranks.ErrNoMem
	}
	return ErrIO
}

// ioErr is the error of a failed system call on file name.
func ioErr(op, what, name string, err error) error {
	return &ranks.Error{Class: errnoClass(err), Op: op, Rank: -1, Detail: fmt.Sprintf("%s %s: %v", what, name, err)}
}

// memberErr is the error of a collective call at a member whose own part
// was fine, when member k (-1: some member) reported code.
func memberErr(op string, k int, code int64, what string) error {
	if k < 0 {
		return &ranks.Error{Class: classOf(code), Op: op, Rank: -1, Detail: what}
	}
	return &ranks.Error{Class: classOf(code), Op: op, Rank: k, Detail: fmt.Sprintf("member %d: %s", k, what)}
}

// relabel gives an error of a collective that a file call made the
// file call's name.
func relabel(err error, op string) error {
	var re *ranks.Error
	if errors.As(err, &re) {
		out := *re
		if out.Op != op && out.Op != "" {
			out.Detail = out.Op + ": " + out.Detail
		}
		out.Op = op
		return &out
	}
	return err
}
