// LD_PRELOAD diagnostic for crashes inside the driver: on SIGSEGV or SIGBUS it
// prints the thread's name, the fault address, glibc's backtrace and the load
// address of every object, so frames can be resolved with addr2line.
//   gcc -O1 -shared -fPIC -o libsegv.so segv_backtrace.c -lpthread
//   LD_PRELOAD=$PWD/libsegv.so ./test-binary ...
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <ucontext.h>
#include <link.h>
static int cb(struct dl_phdr_info *i, size_t s, void *d) { (void)s;(void)d;
  fprintf(stderr, "  base %p %s\n", (void*)i->dlpi_addr, i->dlpi_name); return 0; }
static void h(int sig, siginfo_t *si, void *uc) {
  char name[64] = "?"; pthread_getname_np(pthread_self(), name, sizeof name);
  ucontext_t *u = uc;
  fprintf(stderr, "\n=== SIGNAL %d in thread '%s' addr %p rip %p\n", sig, name, si->si_addr,
          (void*)u->uc_mcontext.gregs[REG_RIP]);
  void *bt[64]; int n = backtrace(bt, 64); backtrace_symbols_fd(bt, n, 2);
  dl_iterate_phdr(cb, 0);
  signal(sig, SIG_DFL); raise(sig);
}
__attribute__((constructor)) static void init(void) {
  struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_sigaction = h; sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &sa, 0); sigaction(SIGBUS, &sa, 0);
}
