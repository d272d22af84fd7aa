#include "textflag.h"

// func clone(flags, stack, ppid uintptr) (pid, errno uintptr)
//
// clone(flags, stack, 0, 0, 0). The child, on stack, shares the caller's
// memory and runs no Go code: it blocks every signal, asks for SIGKILL
// at its parent thread's death, exits if its parent (ppid) is gone
// already, and pauses for ever.
TEXT ·clone(SB), NOSPLIT, $0-40
	MOVQ flags+0(FP), DI
	MOVQ stack+8(FP), SI
	MOVQ ppid+16(FP), R12 // kept across the syscall, in the child too
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
	MOVQ $0, pid+24(FP)
	MOVQ AX, errno+32(FP)
	RET
ok:
	MOVQ AX, pid+24(FP)
	MOVQ $0, errno+32(FP)
	RET

child:
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
loop:
	MOVL $34, AX // SYS_pause
	SYSCALL
	JMP loop
gone:
	MOVL $0, DI
	MOVL $231, AX // SYS_exit_group
	SYSCALL
	JMP gone
