#include "textflag.h"

// func clone(flags, stack, ppid, ready uintptr) (pid, errno uintptr)
//
// clone(flags, stack, 0, 0, 0). The child, on stack, shares the caller's
// memory and runs no Go code: it closes every file it got a copy of,
// blocks every signal, asks for SIGKILL at its parent thread's death,
// exits if its parent (ppid) is gone already, stores 1 at ready, and
// pauses for ever.
TEXT ·clone(SB), NOSPLIT, $0-48
	MOVQ flags+0(FP), DI
	MOVQ stack+8(FP), SI
	MOVQ ppid+16(FP), R12 // R12 and R14 are kept across syscalls, in the child too
	MOVQ ready+24(FP), R14
	MOVQ $0, DX
	MOVQ $0, R10
	MOVQ $0, R8
	MOVL $56, AX // SYS_clone
	SYSCALL
	CMPQ AX, $0
	JEQ child
	CMPQ AX, $0xfffffffffffff001
	JLS ok
	NEGQ AX
	MOVQ $0, pid+32(FP)
	MOVQ AX, errno+40(FP)
	RET
ok:
	MOVQ AX, pid+32(FP)
	MOVQ $0, errno+40(FP)
	RET

child:
	// close_range(0, ~0, 0): a clone without CLONE_FILES has a copy of
	// the parent's files, and a socket or pipe kept here would stay open
	// after the parent's death.
	MOVL $0, DI
	MOVL $-1, SI
	MOVL $0, DX
	MOVL $436, AX
	SYSCALL
	CMPQ AX, $0
	JNE gone // no close_range (Linux before 5.9): no keeper
	// rt_sigprocmask(SIG_SETMASK, &all, NULL, 8)
	MOVQ $-1, AX
	PUSHQ AX
	MOVQ SP, SI
	MOVL $2, DI
	MOVQ $0, DX
	MOVL $8, R10
	MOVL $14, AX
	SYSCALL
	// prctl(PR_SET_PDEATHSIG, SIGKILL)
	MOVL $1, DI
	MOVL $9, SI
	MOVQ $0, DX
	MOVQ $0, R10
	MOVQ $0, R8
	MOVL $157, AX
	SYSCALL
	// getppid() != ppid: the parent died before the prctl took effect.
	MOVL $110, AX
	SYSCALL
	CMPQ AX, R12
	JNE gone
	MOVL $1, (R14)
loop:
	MOVL $34, AX // SYS_pause
	SYSCALL
	JMP loop
gone:
	MOVL $0, DI
	MOVL $231, AX // SYS_exit_group
	SYSCALL
	JMP gone
