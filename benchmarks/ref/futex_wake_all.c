/* The floor under ulfm_revoke: how long N processes asleep on one futex
 * word take to run again after a single FUTEX_WAKE of them all, with
 * nothing else to do (no runtime, no engine), on this machine's vCPUs.
 * Each child sleeps on the word, then, once woken, records the time and
 * sleeps on a second word (so that no exit competes for the CPUs); the
 * parent waits 3 ms (the sleepers' vCPUs go idle, as in ulfm_revoke),
 * reads the clock, sets the word and wakes them all. It prints the
 * median over TRIALS of the time until the last child ran.
 *
 *   cc -O2 -o /tmp/futex_wake_all benchmarks/ref/futex_wake_all.c
 *   /tmp/futex_wake_all N TRIALS
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>
static long now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000L+t.tv_nsec;}
int main(int argc,char**argv){
  int n=atoi(argv[1]), trials=atoi(argv[2]);
  struct sh { _Atomic uint32_t word; _Atomic uint32_t word2; _Atomic int done; _Atomic int asleep; long t0; long t1[64]; } *s=mmap(0,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  long res[1000];
  for(int k=0;k<trials;k++){
    s->word=0; s->word2=0; s->done=0; s->asleep=0;
    for(int i=0;i<n;i++) if(!fork()){ atomic_fetch_add(&s->asleep,1); while(atomic_load(&s->word)==0) syscall(SYS_futex,&s->word,FUTEX_WAIT,0,0,0,0); s->t1[i]=now(); atomic_fetch_add(&s->done,1); while(atomic_load(&s->word2)==0) syscall(SYS_futex,&s->word2,FUTEX_WAIT,0,0,0,0); _exit(0);}
    while(atomic_load(&s->asleep)<n) usleep(100);
    usleep(3000);
    s->t0=now(); atomic_store(&s->word,1); syscall(SYS_futex,&s->word,FUTEX_WAKE,1<<30,0,0,0);
    while(atomic_load(&s->done)<n) usleep(50);
    atomic_store(&s->word2,1); syscall(SYS_futex,&s->word2,FUTEX_WAKE,1<<30,0,0,0);
    for(int i=0;i<n;i++) wait(0);
    long mx=0; for(int i=0;i<n;i++) if(s->t1[i]-s->t0>mx) mx=s->t1[i]-s->t0;
    res[k]=mx;
  }
  // median
  for(int i=0;i<trials;i++)for(int j=i+1;j<trials;j++) if(res[j]<res[i]){long t=res[i];res[i]=res[j];res[j]=t;}
  printf("sleepers %d: last wakes after median %.1f us (min %.1f, max %.1f)\n", n, res[trials/2]/1e3, res[0]/1e3, res[trials-1]/1e3);
}
