#include "textflag.h"

// func clone(flags, stack, ppid, ready uintptr) (pid, errno uintptr)
//
// clone(flags, stack, 0, 0, 0). The child, on stack, shares the caller's
// memory and runs no Go code: it closes every file it got a copy of,
// blocks every signal, opens a pidfd of its parent (ppid), leaves the
// parent's process group, exits if the parent is gone already, stores 1
// at ready, and waits for the pidfd to be readable (the parent and all
// its threads ended), then exits. Without pidfd_open it asks for
// SIGKILL at its parent thread's death instead, and pauses for ever.
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
	// pidfd_open(ppid, 0): the keeper leaves when the parent process
	// has ended, every thread of it. Its death signal (below) comes with
	// its parent thread's death, and a thread of the parent that ends
	// after the keeper would tear the memory down in the parent's exit.
	MOVQ R12, DI
	MOVL $0, SI
	MOVL $434, AX
	SYSCALL
	CMPQ AX, $0xfffffffffffff001
	JAE deathsig // no pidfd_open (Linux before 5.3)
	MOVQ AX, R13
	// setpgid(0, 0): a kill of the parent's process group (a node's
	// SIGKILL) leaves the keeper to follow its parent's end.
	MOVL $0, DI
	MOVL $0, SI
	MOVL $109, AX
	SYSCALL
	// getppid() != ppid: the pidfd may name another process.
	MOVL $110, AX
	SYSCALL
	CMPQ AX, R12
	JNE gone
	// setpriority(PRIO_PROCESS, 0, 19)
	MOVL $0, DI
	MOVL $0, SI
	MOVL $19, DX
	MOVL $141, AX
	SYSCALL
	MOVL $1, (R14)
	// poll(&{fd, POLLIN}, 1, -1) until the pidfd is readable.
	MOVQ $1, AX
	SHLQ $32, AX
	ORQ R13, AX
	PUSHQ AX
wait:
	MOVQ SP, DI
	MOVL $1, SI
	MOVQ $-1, DX
	MOVL $7, AX // SYS_poll
	SYSCALL
	CMPQ AX, $1
	JNE wait // interrupted (a stop): poll again
	JMP gone
deathsig:
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
